package events

import (
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// t0 is the start of the fixed clock most internal tests run on.
var t0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// logsOn opens a keyspace of its own on the test node and returns its session and a function
// making Logs on that keyspace that read clock: the internal tests run several writers of one
// counter (a crashed one and another, a slow one, a reader) and write rows as older releases did.
func logsOn(t *testing.T, clock *testnode.Clock) (*gocql.Session, func(opts ...Option) *Log) {
	t.Helper()
	session, ks := testnode.NewSession(t)
	return session, func(opts ...Option) *Log {
		t.Helper()
		l, err := NewLog(session, append([]Option{WithKeyspace(ks), WithClock(clock.Now), WithoutClockCheck()}, opts...)...)
		require.NoError(t, err)
		return l
	}
}
