package guard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkFastPath interleaves, in one loop, a plain INSERT of a processed_messages row, the
// guard's fast path on a new message (with its time) of an owned scope, with the default
// horizon, and the guard's LWT path on a new message of a scope it does not own; each is timed
// on its own, so drift in the node's latency hits all three alike. It reports each one's mean
// latency and the ratios of the fast path to the plain INSERT and to the LWT path.
func BenchmarkFastPath(b *testing.B) {
	session, ks := testnode.NewSession(b)
	ctx := context.Background()
	g := guardOn(b, session, ks)
	owned := guard.Scope{Group: "bench", Topic: "t", Partition: 0}
	strict := guard.Scope{Group: "bench", Topic: "t", Partition: 1}
	pre, err := bloom.NewPreCheck("bench/t/0", bloom.WithExpectedItems(1_000_000))
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Own(ctx, owned, 1, pre); err != nil {
		b.Fatal(err)
	}
	defer g.Disown(owned)
	insert := `INSERT INTO processed_messages (consumer_group, topic, partition, message_id, fingerprint, status, owner, fence, lease_until, attempts, result, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, 'COMPLETED', ?, 1, ?, 1, ?, ?, ?, ?) USING TTL ?`
	noop := func(context.Context, guard.Message) error { return nil }
	payload := []byte("payload")
	var tInsert, tFast, tLWT time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("m-", i)
		now := time.Now()
		start := time.Now()
		if err := session.Query(insert, "bench", "t", 2, id, payload, gocql.TimeUUID(), now, []byte{}, now, now,
			now.Add(24*time.Hour), 86400).Exec(); err != nil {
			b.Fatal(err)
		}
		tInsert += time.Since(start)
		start = time.Now()
		if out, err := g.Process(ctx, guard.Message{Scope: owned, ID: id, Payload: payload, Time: now}, noop); err != nil || out != guard.Processed {
			b.Fatal(out, err)
		}
		tFast += time.Since(start)
		start = time.Now()
		if out, err := g.Process(ctx, guard.Message{Scope: strict, ID: id, Payload: payload, Time: now}, noop); err != nil || out != guard.Processed {
			b.Fatal(out, err)
		}
		tLWT += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tInsert.Nanoseconds())/n, "insert-ns/op")
	b.ReportMetric(float64(tFast.Nanoseconds())/n, "fast-ns/op")
	b.ReportMetric(float64(tLWT.Nanoseconds())/n, "lwt-ns/op")
	b.ReportMetric(float64(tFast)/float64(tInsert), "fast/insert")
	b.ReportMetric(float64(tFast)/float64(tLWT), "fast/lwt")
	if s := g.Stats(); s.FastPath != int64(b.N) {
		b.Fatalf("fast path taken %d times for %d new messages", s.FastPath, b.N)
	}
}

// BenchmarkWarmUp measures Own's warm-up of a pre-check with the default horizon over a scope
// holding warmUpKeys ids written within it (by ProcessBatch's fast path, in the bucketed table),
// and reports the keys loaded per second, from which the warm-up time at a rate follows
// (rate x horizon keys), and the wall time of one warm-up. The group's layout is the default
// one over the whole horizon (the clock starts two hours after the group was recorded), so a
// warm-up reads every bucket of every window of the horizon in both windowed tables, most of
// them empty. It also reports the memory of a default pre-check sized for one
// horizon at 100, 1k and 10k messages per second (bloom.WithExpectedItems(rate x 1 h)).
func BenchmarkWarmUp(b *testing.B) {
	const warmUpKeys = 20_000
	session, ks := testnode.NewSession(b)
	ctx := context.Background()
	clock := testnode.NewClock(time.Now())
	g := guardOn(b, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck())
	scope := guard.Scope{Group: "bench", Topic: "warm", Partition: 0}
	noop := func(context.Context, guard.Message) error { return nil }
	if _, err := g.Process(ctx, guard.Message{Scope: scope, ID: "first"}, noop); err != nil { // records the group
		b.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	pre, err := bloom.NewPreCheck("bench/warm/0")
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Own(ctx, scope, 1, pre); err != nil {
		b.Fatal(err)
	}
	defer g.Disown(scope)
	now := clock.Now()
	for p := range warmUpKeys / lwt.MaxBatchRows {
		msgs := make([]guard.Message, lwt.MaxBatchRows)
		for i := range msgs {
			msgs[i] = guard.Message{Scope: scope, ID: fmt.Sprintf("m-%d-%d", p, i), Time: now}
		}
		if _, err := g.ProcessBatch(ctx, msgs, noop); err != nil {
			b.Fatal(err)
		}
	}
	if s := g.Stats(); s.FastPath != warmUpKeys {
		b.Fatalf("fast path %d of %d", s.FastPath, warmUpKeys)
	}
	epoch := uint64(1)
	var loaded uint64
	b.ResetTimer()
	for b.Loop() {
		epoch++
		if err := g.Own(ctx, scope, epoch, pre); err != nil {
			b.Fatal(err)
		}
		loaded += pre.Stats().WarmUpKeys
	}
	b.ReportMetric(float64(loaded)/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(epoch-1), "s/warm-up")
	for _, rate := range []uint64{100, 1000, 10_000} {
		p, err := bloom.NewPreCheck("size", bloom.WithExpectedItems(rate*3600))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(p.Filter().MemoryBytes())/(1<<20), fmt.Sprintf("MiB@%d/s", rate))
	}
}
