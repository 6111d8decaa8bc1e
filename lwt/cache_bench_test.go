package lwt

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// BenchmarkCacheHit measures ExecuteOnce answered by the cache alone, without a node: the
// store's session is never used on a hit, so this runs anywhere and isolates the hit path that
// BenchmarkExecuteOnce/duplicate-from-cache measures against a real node.
func BenchmarkCacheHit(b *testing.B) {
	s, err := NewStore(new(gocql.Session), IdempotencyKeys("ks"), WithCache(1024))
	if err != nil {
		b.Fatal(err)
	}
	key := IdempotencyKey("bench", "duplicate")
	s.cache.put(key, &Record{Status: StatusCompleted, Result: []byte(`{"status":"ok"}`), ExpiresAt: time.Now().Add(time.Hour)})
	ctx := context.Background()
	fn := func(context.Context) ([]byte, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		if res, err := s.ExecuteOnce(ctx, key, fn); err != nil || !res.FromCache {
			b.Fatalf("not a cache hit: %v", err)
		}
	}
}

// BenchmarkCacheHitParallel is BenchmarkCacheHit from every P at once, on keys spread over the
// cache, so it measures what the cache's lock costs hits that contend for it (-cpu 1,2,...).
func BenchmarkCacheHitParallel(b *testing.B) {
	s, err := NewStore(new(gocql.Session), IdempotencyKeys("ks"), WithCache(1024))
	if err != nil {
		b.Fatal(err)
	}
	const keys = 256
	for i := range keys {
		s.cache.put(IdempotencyKey("bench", strconv.Itoa(i)), &Record{Status: StatusCompleted, Result: []byte(`{"status":"ok"}`), ExpiresAt: time.Now().Add(time.Hour)})
	}
	ctx := context.Background()
	fn := func(context.Context) ([]byte, error) { return nil, nil }
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := IdempotencyKey("bench", strconv.Itoa(int(next.Add(1)%keys)))
		for pb.Next() {
			if res, err := s.ExecuteOnce(ctx, key, fn); err != nil || !res.FromCache {
				b.Errorf("not a cache hit: %v", err)
				return
			}
		}
	})
}
