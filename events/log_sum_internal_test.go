package events

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGroupReadsCoversEachPartitionOnce checks that the grouped sum reads name every part of
// every window exactly once, and never more than maxReadPartitions partitions in one query.
func TestGroupReadsCoversEachPartitionOnce(t *testing.T) {
	t.Parallel()
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, parts := range []int{1, 4, 7, 32, 33, MaxParts} {
		for _, n := range []int{1, 5, 8, 9, 100} {
			t.Run(fmt.Sprint(parts, "x", n), func(t *testing.T) {
				var starts []time.Time
				for i := range n {
					starts = append(starts, base.Add(time.Duration(i)*time.Second))
				}
				seen := make(map[string]int)
				for _, r := range groupReads(starts, parts) {
					require.LessOrEqual(t, len(r.starts)*len(r.parts), maxReadPartitions)
					require.NotEmpty(t, r.starts)
					require.NotEmpty(t, r.parts)
					for _, s := range r.starts {
						for _, p := range r.parts {
							seen[fmt.Sprint(s.Unix(), "/", p)]++
						}
					}
				}
				require.Len(t, seen, n*parts)
				for k, c := range seen {
					require.Equal(t, 1, c, k)
				}
			})
		}
	}
}
