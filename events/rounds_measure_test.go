//go:build measure

// The per-round measurement of a total quoted in docs/sizing.md ("What a total reads"): not
// part of make test, since it loads the node for about 75 s. Run it alone:
//
//	CASSANDRA_HOSTS=127.0.0.1:9042 RATE=10000 WIDTH=250 go test -tags measure -run TestMeasureRounds -v ./events/

package events

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestMeasureRounds times each round of a total of one counter written at RATE events/s by 32
// paced writers, with RunRollups every 500 ms, once its windows took the hot width WIDTH (in ms,
// at most 1,000; the clock skew is set to 1 s so that the width takes effect within the 45 s
// before the totals): the tail (rollup row and index slice), the sums and marks, the index
// listed again, the whole, and one plain read of the rollup row after each total.
func TestMeasureRounds(t *testing.T) {
	rate, _ := strconv.Atoi(os.Getenv("RATE"))
	wms, _ := strconv.Atoi(os.Getenv("WIDTH"))
	_, ks := testnode.NewSession(t)
	session := testnode.RecommendedSession(t, ks)
	w := time.Duration(wms) * time.Millisecond
	hot := min(w, time.Second)
	l, err := NewLog(session, WithKeyspace(ks), WithMaxClockSkew(time.Second), WithWindowWidths(hot, 5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var acked atomic.Int64
	writePaced(ctx, &wg, l, "hot", rate, &acked)
	wg.Go(func() { _ = l.RunRollups(ctx, 500*time.Millisecond, nil) })
	time.Sleep(45 * time.Second)
	var r1, r2, r3, all, probe []time.Duration
	start := time.Now()
	for time.Since(start) < 25*time.Second {
		t0 := time.Now()
		now := l.cfg.Now()
		end := l.readEnd(now)
		_, legacy, windows, err := l.tail(ctx, "hot", end)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		_, _, err = l.sumEach(ctx, "hot", legacy, windows, now, true)
		if err != nil {
			t.Fatal(err)
		}
		t2 := time.Now()
		if _, err := l.partsChanged(ctx, "hot", windows, now, end); err != nil {
			t.Fatal(err)
		}
		t3 := time.Now()
		r1, r2, r3, all = append(r1, t1.Sub(t0)), append(r2, t2.Sub(t1)), append(r3, t3.Sub(t2)), append(all, t3.Sub(t0))
		t4 := time.Now()
		if _, err := l.readRollup(ctx, "hot", false); err != nil {
			t.Fatal(err)
		}
		probe = append(probe, time.Since(t4))
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	wg.Wait()
	for _, x := range []struct {
		n string
		d []time.Duration
	}{{"tail", r1}, {"sums", r2}, {"relist", r3}, {"all", all}, {"row read", probe}} {
		t.Logf("width %v rate %d %-8s p50 %v p90 %v p99 %v", w, rate, x.n, pct(x.d, .5), pct(x.d, .9), pct(x.d, .99))
	}
	st := l.Stats()
	t.Logf("summed %d reused %d checks %d totals %d", st.Summed, st.Reused, st.Checks, len(all))
}
