package events_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestConcurrentTotalsShareReads reads one counter's total from 32 goroutines at once while 8
// writers record events into it: every total counts every event acknowledged before its call
// and nothing not yet sent, and the calls share reads (far fewer reads than calls). A call whose
// context is done gets its error, and the next call reads again.
func TestConcurrentTotalsShareReads(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, ks := testnode.NewSession(t)
	l, err := events.NewLog(session, events.WithKeyspace(ks))
	require.NoError(t, err)

	var sent, acked atomic.Int64
	var writers sync.WaitGroup
	for w := range 8 {
		writers.Go(func() {
			for i := range 40 {
				sent.Add(1)
				e := events.Event{Counter: "popular", ID: fmt.Sprint(w, "-", i), Delta: 1, Time: time.Now()}
				if err := l.Record(ctx, e); err != nil {
					t.Errorf("record %s: %v", e.ID, err)
					return
				}
				acked.Add(1)
			}
		})
	}
	var readers sync.WaitGroup
	done := make(chan struct{})
	for range 32 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				before := acked.Load()
				total, err := l.Total(ctx, "popular")
				after := sent.Load()
				if err != nil {
					t.Errorf("total: %v", err)
					return
				}
				if total < before || total > after {
					t.Errorf("total %d: want %d..%d (acknowledged before the call .. sent after it)", total, before, after)
					return
				}
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()

	st := l.Stats()
	t.Logf("%d totals from %d reads", st.Totals, st.TotalReads)
	require.Less(t, st.TotalReads*2, st.Totals, "concurrent calls share reads")
	gone, stop := context.WithCancel(ctx)
	stop()
	_, err = l.Total(gone, "popular")
	require.ErrorIs(t, err, context.Canceled)
	total, err := l.Total(ctx, "popular")
	require.NoError(t, err)
	require.Equal(t, acked.Load(), total)
}
