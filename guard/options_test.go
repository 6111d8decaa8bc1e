package guard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"

	"github.com/cassdedup/cassdedup/guard"
)

// TestBadOptionNamesItself: New refuses each bad option with an error that wraps
// ErrInvalidOption and names the option and its value. The session is never used.
func TestBadOptionNamesItself(t *testing.T) {
	t.Parallel()
	for want, opt := range map[string]guard.Option{
		"WithRetention(0s)":                              guard.WithRetention(0),
		"WithLease(10ms)":                                guard.WithLease(10 * time.Millisecond),
		"WithMaxAttempts(0)":                             guard.WithMaxAttempts(0),
		"WithMaxPayload(0)":                              guard.WithMaxPayload(0),
		"WithBatchWindow(1.5s)":                          guard.WithBatchWindow(1500 * time.Millisecond),
		"WithBatchBuckets(0)":                            guard.WithBatchBuckets(0),
		"WithPartitionRate(0)":                           guard.WithPartitionRate(0),
		"WithLegacyBatchLayout(0s, 1)":                   guard.WithLegacyBatchLayout(0, 1),
		"WithSerialConsistency(UNKNOWN_SERIAL_CONS_0x4)": guard.WithSerialConsistency(gocql.SerialConsistency(gocql.Quorum)),
		"WithClock(nil)":                                 guard.WithClock(nil),
		"WithLogger(nil)":                                guard.WithLogger(nil),
		"option 0: nil":                                  nil,
		"WithOwnership(10s, 1s)":                         guard.WithOwnership(10*time.Second, time.Second),
		"WithOwnership(168h0m1s, 3s)":                    guard.WithOwnership(7*24*time.Hour+time.Second, 3*time.Second),
		"WithOwnership(175200h0m1s, 3s)":                 guard.WithOwnership(20*365*24*time.Hour+time.Second, 3*time.Second),
		"WithWriteRequestTimeout(0s)":                    guard.WithWriteRequestTimeout(0),
		"WithWriteRequestTimeout(1m0.001s)":              guard.WithWriteRequestTimeout(time.Minute + time.Millisecond),
		"lease 2h0m0s exceeds retention 1h0m0s":          guard.WithLease(2 * time.Hour),
	} {
		opts := []guard.Option{opt}
		if strings.HasPrefix(want, "lease") {
			opts = append(opts, guard.WithRetention(time.Hour))
		}
		_, err := guard.New(&gocql.Session{}, opts...)
		if assert.ErrorIs(t, err, guard.ErrInvalidOption, want) {
			assert.Contains(t, err.Error(), want)
		}
	}
}
