package lwt

import (
	"context"
	"testing"
	"time"
)

// horizonOnly is a PreCheck with a horizon and nothing else: vouches reads only Retention.
type horizonOnly struct{ h time.Duration }

func (p horizonOnly) Admit(string) (bool, bool, uint64)               { return true, false, 1 }
func (p horizonOnly) ObserveMaybeSeen(bool)                           {}
func (p horizonOnly) Owns(uint64) bool                                { return true }
func (p horizonOnly) WarmUp(context.Context, uint64, KeySource) error { return nil }
func (p horizonOnly) Invalidate()                                     {}
func (p horizonOnly) Retention() time.Duration                        { return p.h }

// TestVouchesOnlyWithinTheHorizon: the fast path may answer for a call only while the pre-check
// cannot have forgotten its key: a timed call within the horizon less the skew, an untimed one
// only when the horizon covers the retention plus the commit timeout.
func TestVouchesOnlyWithinTheHorizon(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := defaultConfig()
	cfg.now = func() time.Time { return now }
	s := &Store{cfg: cfg, born: time.Now()}
	live := &lease{}
	live.deadline.Store(int64(time.Hour)) // a lease held for the test's duration
	hour := &owner{pre: horizonOnly{time.Hour}, lease: live}
	full := &owner{pre: horizonOnly{cfg.retention + cfg.commitTimeout}, lease: live}
	for _, tc := range []struct {
		name string
		o    *owner
		at   time.Time
		want bool
	}{
		{"untimed, 1 h horizon", hour, time.Time{}, false},
		{"untimed, horizon covers the retention", full, time.Time{}, true},
		{"now", hour, now, true},
		{"horizon less the skew ago", hour, now.Add(-time.Hour + MaxClockSkew), true},
		{"just past it", hour, now.Add(-time.Hour + MaxClockSkew - time.Second), false},
		{"two hours ago", hour, now.Add(-2 * time.Hour), false},
		{"within the skew ahead", hour, now.Add(MaxClockSkew), true},
		{"further ahead", hour, now.Add(MaxClockSkew + time.Second), false},
		{"12 h ago, full horizon", full, now.Add(-12 * time.Hour), true},
		{"a day ago, full horizon", full, now.Add(-24 * time.Hour), false},
	} {
		if got := s.vouches(tc.o, tc.at); got != tc.want {
			t.Errorf("%s: vouches %v, want %v", tc.name, got, tc.want)
		}
		if cn, _, _ := s.admit(tc.o, "k", tc.at); cn != tc.want {
			t.Errorf("%s: admit said clearly new %v, want %v", tc.name, cn, tc.want)
		}
	}
}
