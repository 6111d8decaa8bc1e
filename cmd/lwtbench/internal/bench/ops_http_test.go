package bench

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestHTTPOperationsAgainstNode runs the three HTTP operations against a node: each answers as
// its name says, and a request that gets another answer (a repeated "new" key, a duplicate that
// ran) is an error rather than a timed success.
func TestHTTPOperationsAgainstNode(t *testing.T) {
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	env := Env{Session: session, Keyspace: ks, RunID: newRunID(time.Now()), Consistency: gocql.Quorum,
		Serial: gocql.Serial, MaxWorkers: 2, WorkerSpans: []time.Duration{time.Second, time.Second}}
	var ops []Operation
	for _, build := range []func(Env) (Operation, error){newHTTPBare, newHTTPNew, newHTTPDup} {
		op, err := build(env)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, op.(io.Closer).Close()) })
		require.NoError(t, op.Setup(ctx), op.Name())
		ops = append(ops, op)
	}
	for _, op := range ops {
		for seq := range 3 {
			require.NoError(t, op.Do(ctx, Request{Phase: 1, Worker: seq % 2, Seq: seq}), op.Name())
		}
	}
	bare, fresh := ops[0], ops[1]
	assert.NoError(t, bare.Do(ctx, Request{Phase: 1, Worker: 0, Seq: 0}), "the bare handler runs every time")
	err := fresh.Do(ctx, Request{Phase: 1, Worker: 0, Seq: 0})
	assert.ErrorIs(t, err, errUnexpectedOutcome, "a repeated key is replayed, not new")
	assert.Equal(t, outcomeError, classify(err))
}
