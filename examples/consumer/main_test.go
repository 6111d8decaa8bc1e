package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

func TestRunAppliesEachPaymentOnce(t *testing.T) {
	session, ks := testnode.NewSession(t)
	var out bytes.Buffer
	s, err := run(context.Background(), session, ks, &out)
	require.NoError(t, err)
	t.Log(out.String())
	assert.EqualValues(t, 600, s.deliveries)
	assert.EqualValues(t, 600, s.acked)
	assert.GreaterOrEqual(t, s.redeliveries, int64(20), "the 20 handlers that fail once are delivered again")
	assert.EqualValues(t, 200, s.applied, "each of the 200 payments applied exactly once")
}
