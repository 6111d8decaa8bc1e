//go:build measure

// The read-path measurement quoted in docs/sizing.md ("What a total reads"): not part of make
// test, since it loads the node for about 40 s. Run it alone, under the heavy-job lock:
//
//	CASSANDRA_HOSTS=127.0.0.2:9042 RATE=2000 go test -tags measure -run TestMeasureTotal -v ./events/

package events

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/internal/parallel"
	"github.com/cassdedup/cassdedup/testnode"
)

// pct returns the p-quantile of ds, sorting it.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[int(float64(len(ds)-1)*p)]
}

// oldTotal is the read path before tail and before the Log cached sums, kept here only to be
// measured beside Total in one run: the row, then the index from its watermark, then one sum
// query per part of every unfolded window (three rounds, every unfolded event summed).
func oldTotal(ctx context.Context, l *Log, counter string) (int64, int, error) {
	st, err := l.readRollup(ctx, counter, false)
	if err != nil {
		return 0, 0, err
	}
	legacy, windows, err := l.listTail(ctx, counter, st, l.readEnd(l.cfg.Now()))
	if err != nil {
		return 0, 0, err
	}
	_ = legacy
	type rd struct {
		start time.Time
		part  int
	}
	var reads []rd
	for _, w := range windows {
		for p := range w.parts[0] {
			reads = append(reads, rd{w.start, p})
		}
	}
	var total atomic.Int64
	err = parallel.ForEach(ctx, len(reads), 8, func(ctx context.Context, i int) error {
		var s int64
		err := l.session.Query("SELECT sum(delta) FROM counter_window_events WHERE counter = ? AND bucket = ? AND part = ?", counter, reads[i].start, reads[i].part).WithContext(ctx).Scan(&s)
		total.Add(s)
		return err
	})
	return st.total + total.Load(), len(reads), err
}

// TestMeasureTotal records one counter at RATE events/s (default 2,000) with 32 paced writers
// and RunRollups every 500 ms, and for 30 s alternates Total with the earlier read path,
// printing both latencies, the rollup row's own read, the unfolded rows the earlier path sums
// and the partition sums Total took from the node and from its cache.
func TestMeasureTotal(t *testing.T) {
	rate, _ := strconv.Atoi(os.Getenv("RATE"))
	if rate == 0 {
		rate = 2000
	}
	_, ks := testnode.NewSession(t)
	session := testnode.RecommendedSession(t, ks)
	l, err := NewLog(session, WithKeyspace(ks))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var acked atomic.Int64
	writePaced(ctx, &wg, l, "hot", rate, &acked)
	wg.Go(func() { _ = l.RunRollups(ctx, 500*time.Millisecond, nil) })
	time.Sleep(6 * time.Second)
	var oldD, newD, rowD []time.Duration
	var rows, queries []int
	start := time.Now()
	a0 := acked.Load()
	s0 := l.Stats()
	for time.Since(start) < 30*time.Second {
		t0 := time.Now()
		if _, err := l.Total(ctx, "hot"); err != nil {
			t.Fatal(err)
		}
		newD = append(newD, time.Since(t0))
		t1 := time.Now()
		_, nq, err := oldTotal(ctx, l, "hot")
		if err != nil {
			t.Fatal(err)
		}
		oldD = append(oldD, time.Since(t1))
		queries = append(queries, nq)
		t2 := time.Now()
		st, err := l.readRollup(ctx, "hot", false)
		if err != nil {
			t.Fatal(err)
		}
		rowD = append(rowD, time.Since(t2))
		var bs []time.Time
		for b := st.watermark; b.Before(time.Now().Add(time.Second)); b = b.Add(time.Second) {
			bs = append(bs, b)
		}
		var n int
		if err := session.Query("SELECT count(*) FROM counter_window_events WHERE counter = ? AND bucket IN ? AND part IN ?", "hot", bs, []int{0, 1, 2, 3}).Scan(&n); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, n)
	}
	rate2 := float64(acked.Load()-a0) / time.Since(start).Seconds()
	s1 := l.Stats()
	t.Logf("per Total: %.1f partitions summed by the node, %.1f reused from the cache (rollups included)",
		float64(s1.Summed-s0.Summed)/float64(s1.Totals-s0.Totals), float64(s1.Reused-s0.Reused)/float64(s1.Totals-s0.Totals))
	stop()
	wg.Wait()
	sort.Ints(rows)
	sort.Ints(queries)
	t.Logf("target %d/s achieved %.0f/s; %d rounds; unfolded rows per total p50 %d max %d; old sum queries p50 %d", rate, rate2, len(newD), rows[len(rows)/2], rows[len(rows)-1], queries[len(queries)/2])
	for _, x := range []struct {
		n string
		d []time.Duration
	}{{"new Total", newD}, {"old Total", oldD}, {"row read", rowD}} {
		t.Logf("%-10s p50 %v p90 %v p99 %v", x.n, pct(x.d, .5), pct(x.d, .9), pct(x.d, .99))
	}
}

// writePaced records events into counter from 32 writers, rate events per second together,
// each event due at its turn (a writer behind it does not wait), until ctx ends, and counts the
// events acknowledged in acked.
func writePaced(ctx context.Context, wg *sync.WaitGroup, l *Log, counter string, rate int, acked *atomic.Int64) {
	const writers = 32
	begin := time.Now()
	for w := range writers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				due := begin.Add(time.Duration(float64(w+i*writers) / float64(rate) * float64(time.Second)))
				time.Sleep(time.Until(due))
				if err := l.Record(ctx, Event{Counter: counter, ID: fmt.Sprint("w", w, "-", i), Delta: 1, Time: time.Now()}); err == nil {
					acked.Add(1)
				}
			}
		})
	}
}
