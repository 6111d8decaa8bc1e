package events_test

import (
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"

	"github.com/cassdedup/cassdedup/events"
)

// TestBadOptionNamesItself: NewLog refuses each bad option with an error that wraps
// ErrInvalidOption and names the option and its value. The session is never used.
func TestBadOptionNamesItself(t *testing.T) {
	t.Parallel()
	for want, opt := range map[string]events.Option{
		"WithParts(0)":                                   events.WithParts(0),
		"WithParts(257)":                                 events.WithParts(events.MaxParts + 1),
		"WithBucketWidth(7m0s)":                          events.WithBucketWidth(7 * time.Minute),
		"WithLegacyBucketWidth(7m0s)":                    events.WithLegacyBucketWidth(7 * time.Minute),
		"WithGracePeriod(0s)":                            events.WithGracePeriod(0),
		"WithSettleTime(-1ns)":                           events.WithSettleTime(-1),
		"WithMaxClockSkew(2h0m0s)":                       events.WithMaxClockSkew(2 * time.Hour),
		"WithSerialConsistency(UNKNOWN_SERIAL_CONS_0x4)": events.WithSerialConsistency(gocql.SerialConsistency(gocql.Quorum)),
		"WithClock(nil)":                                 events.WithClock(nil),
		"WithWindowWidths(50ms, 30s)":                    events.WithWindowWidths(50*time.Millisecond, 30*time.Second),
		"WithWindowWidths(250ms, 7m0s)":                  events.WithWindowWidths(250*time.Millisecond, 7*time.Minute),
		"WithWindowWidths(2s, 30s)":                      events.WithWindowWidths(2*time.Second, 30*time.Second),
		"option 0: nil":                                  nil,
	} {
		_, err := events.NewLog(&gocql.Session{}, opt)
		if assert.ErrorIs(t, err, events.ErrInvalidOption, want) {
			assert.Contains(t, err.Error(), want)
		}
	}
}
