package lwt

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkExecuteOnce measures one operation at a time against the node; lwts/op counts the
// conditional writes and serial reads each operation sent.
func BenchmarkExecuteOnce(b *testing.B) {
	s, session, ks := newBenchStore(b)
	ctx := context.Background()
	value := []byte(`{"status":"ok"}`)
	fn := func(context.Context) ([]byte, error) { return value, nil }
	cached, err := NewStore(session, IdempotencyKeys(ks), WithCache(1024))
	require.NoError(b, err)

	run := func(name string, st *Store, op func(i int) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			before := st.Stats().LWTs
			i := 0
			for b.Loop() {
				if err := op(i); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(st.Stats().LWTs-before)/float64(i), "lwts/op")
		})
	}
	run("claim-new-key", s, func(i int) error {
		_, _, err := s.Begin(ctx, IdempotencyKey("bench-claim", fmt.Sprint(b.N, "-", i)), nil)
		return err
	})
	run("execute-once-new-key", s, func(i int) error {
		_, err := s.ExecuteOnce(ctx, IdempotencyKey("bench-exec", fmt.Sprint(b.N, "-", i)), fn)
		return err
	})
	dup := IdempotencyKey("bench", "duplicate")
	_, err = s.ExecuteOnce(ctx, dup, fn)
	require.NoError(b, err)
	run("duplicate-from-node", s, func(int) error {
		res, err := s.ExecuteOnce(ctx, dup, fn)
		if err == nil && !res.Replay {
			err = fmt.Errorf("not a replay")
		}
		return err
	})
	_, err = cached.ExecuteOnce(ctx, dup, fn) // fills the cache
	require.NoError(b, err)
	run("duplicate-from-cache", cached, func(int) error {
		res, err := cached.ExecuteOnce(ctx, dup, fn)
		if err == nil && !res.FromCache {
			err = fmt.Errorf("not served by the cache")
		}
		return err
	})
}
