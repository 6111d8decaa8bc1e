package lwt

import (
	"context"
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
