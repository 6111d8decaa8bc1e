package lwt

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkScanStuck measures a stuck-claim scan of 5000 records without its rate limit, by
// parallelism: rows/s is what one scan reads from the node when nothing paces it.
func BenchmarkScanStuck(b *testing.B) {
	s, _, _ := newBenchStore(b)
	ctx := context.Background()
	const records = 5000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := s.PutCompleted(ctx, IdempotencyKey(fmt.Sprint("tenant-", i%50), fmt.Sprint("k-", i)), nil, []byte("{}"), 1)
			if err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, par := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("parallel-%d", par), func(b *testing.B) {
			b.ReportAllocs()
			var rows int64
			start := time.Now()
			for b.Loop() {
				stats, err := s.ScanStuck(ctx, StuckOptions{ScanOptions: ScanOptions{Parallelism: par, RowsPerSecond: -1}},
					func(StuckClaim) error { return nil })
				require.NoError(b, err)
				require.EqualValues(b, records, stats.Rows)
				rows += stats.Rows
			}
			b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
