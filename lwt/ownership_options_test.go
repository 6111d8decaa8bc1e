package lwt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWithOwnershipRefusesLeasePastTheOwnersRow: a lease longer than the scope_owners row lives
// between renewals (its TTL, a week), or than Cassandra's TTL limit (20 years, which refuses the
// lease cell), is refused when the store is made, not at its first Own.
func TestWithOwnershipRefusesLeasePastTheOwnersRow(t *testing.T) {
	for _, lease := range []time.Duration{MaxOwnerLease + time.Second, 630720001 * time.Second} {
		_, err := storeConfig(WithOwnership(lease, 3*time.Second))
		require.ErrorIs(t, err, ErrInvalidOption, lease)
		require.ErrorContains(t, err, "at most 168h0m0s")
	}
	_, err := storeConfig(WithOwnership(MaxOwnerLease, 3*time.Second))
	require.NoError(t, err)
}

// FuzzOwnershipProblem: OwnershipProblem accepts exactly the settings its doc states.
func FuzzOwnershipProblem(f *testing.F) {
	f.Add(int64(DefaultOwnerLease), int64(DefaultOwnerMargin))
	f.Add(int64(MaxOwnerLease+time.Second), int64(3*time.Second))
	f.Add(int64(3*time.Second), int64(MinOwnerMargin))
	f.Add(int64(-time.Second), int64(-time.Second))
	f.Fuzz(func(t *testing.T, lease, margin int64) {
		l, m := time.Duration(lease), time.Duration(margin)
		want := m >= MinOwnerMargin && l >= 2*m && l%time.Second == 0 && l <= MaxOwnerLease
		if got := OwnershipProblem(l, m) == ""; got != want {
			t.Fatalf("OwnershipProblem(%v, %v) accepts: %t, the rules: %t", l, m, got, want)
		}
	})
}
