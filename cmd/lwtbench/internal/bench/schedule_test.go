package bench

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTotalOpenRequests(t *testing.T) {
	assert.Equal(t, 2000, totalOpenRequests(200, 10*time.Second))
	assert.Equal(t, 1, totalOpenRequests(0.5, time.Second), "one request is due at the start")
	assert.Equal(t, 4, totalOpenRequests(3, 1100*time.Millisecond), "due at 0, 1/3, 2/3 and 1 s")
}

// Every request of the phase is due exactly once, at i/rate, whichever worker takes it.
func TestOpenScheduleCoversEveryRequestOnce(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		rate    float64
		d       time.Duration
		workers int
	}{
		{200, 10 * time.Second, 32},
		{7, 3 * time.Second, 4},
		{1000, time.Second, 3},
		{5, time.Second, 16}, // more workers than requests
	} {
		var due []time.Duration
		for w := range tc.workers {
			s := newOpenSchedule(start, tc.rate, tc.d, tc.workers, w)
			for k := range s.count {
				at := s.intended(k)
				if k > 0 {
					// A worker's own requests are workers/rate apart.
					gap := at.Sub(s.intended(k - 1))
					assert.InDelta(t, float64(tc.workers)/tc.rate, gap.Seconds(), 1e-6)
				}
				due = append(due, at.Sub(start))
			}
		}
		n := totalOpenRequests(tc.rate, tc.d)
		if !assert.Len(t, due, n, "%+v", tc) {
			continue
		}
		sort.Slice(due, func(i, j int) bool { return due[i] < due[j] })
		for i, d := range due {
			assert.InDelta(t, float64(i)/tc.rate, d.Seconds(), 1e-6, "%+v request %d", tc, i)
		}
		assert.Less(t, due[len(due)-1], tc.d, "nothing is due after the phase ends")
	}
}
