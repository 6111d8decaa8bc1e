package counters

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkIncrement measures what an idempotent increment costs and how long its crash window
// stays open: the time from the claim being applied to the claim being marked applied (the
// increment and the mark), during which a crash leaves a claimed-but-unmarked operation for
// ListUnapplied. It also reports the native counter update alone, in the same loop, as the floor.
func BenchmarkIncrement(b *testing.B) {
	session, ks := testnode.NewSession(b)
	s, err := New(session, WithKeyspace(ks))
	require.NoError(b, err)
	ctx := context.Background()
	var claimT, windowT, nativeT time.Duration
	i := 0
	for b.Loop() {
		op := Op{Counter: "bench", ID: fmt.Sprint("op-", b.N, "-", i), Delta: 1}
		i++

		start := time.Now()
		err := session.Query(s.q.increment, int64(1), "bench-native").Consistency(s.cfg.consistency).
			Idempotent(false).RetryPolicy(nil).Exec()
		require.NoError(b, err)
		nativeT += time.Since(start)

		start = time.Now()
		owner, err := s.claim(ctx, op)
		require.NoError(b, err)
		require.NotEqual(b, gocql.UUID{}, owner, "a new operation must be claimed")
		claimed := time.Now()
		require.NoError(b, s.apply(ctx, op, owner))
		claimT += claimed.Sub(start)
		windowT += time.Since(claimed)
	}
	n := float64(i)
	b.ReportMetric(float64(nativeT.Nanoseconds())/n, "native-ns/op")
	b.ReportMetric(float64(claimT.Nanoseconds())/n, "claim-ns/op")
	b.ReportMetric(float64(windowT.Nanoseconds())/n, "window-ns/op")
	b.ReportMetric(float64((claimT+windowT).Nanoseconds())/float64(nativeT.Nanoseconds()), "increment/native")
}
