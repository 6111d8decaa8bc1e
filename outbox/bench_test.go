package outbox

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkStageCost interleaves ExecuteOnce on new keys with and without one staged event, in
// one run against one node, and reports each one's p50 and p99 and the ratio of the p50s: the
// cost the outbox adds to a request.
func BenchmarkStageCost(b *testing.B) {
	session, ks := testnode.NewSession(b)
	store, err := lwt.NewStore(session, Table(ks))
	require.NoError(b, err)
	box, err := New(session, WithKeyspace(ks))
	require.NoError(b, err)
	ctx := context.Background()
	var plain, staged []time.Duration
	payload := []byte(`{"order":"o-1","total":1000,"currency":"EUR"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		stage := i%2 == 1
		start := time.Now()
		_, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey("bench", fmt.Sprint(i)), func(ctx context.Context) ([]byte, error) {
			if stage {
				if err := box.Stage(ctx, Event{Type: "order.placed", Key: "o-1", Payload: payload}); err != nil {
					return nil, err
				}
			}
			return []byte("ok"), nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if stage {
			staged = append(staged, time.Since(start))
		} else {
			plain = append(plain, time.Since(start))
		}
	}
	b.StopTimer()
	if len(plain) == 0 || len(staged) == 0 {
		return
	}
	p50, p99 := quantile(plain, 0.5), quantile(plain, 0.99)
	s50, s99 := quantile(staged, 0.5), quantile(staged, 0.99)
	b.ReportMetric(ms(p50), "once-p50-ms")
	b.ReportMetric(ms(p99), "once-p99-ms")
	b.ReportMetric(ms(s50), "staged-p50-ms")
	b.ReportMetric(ms(s99), "staged-p99-ms")
	b.ReportMetric(ms(s50)/ms(p50), "p50-ratio")
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
