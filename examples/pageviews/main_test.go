package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

func TestRunCountsEachViewOnce(t *testing.T) {
	session, ks := testnode.NewSession(t)
	var out bytes.Buffer
	total, err := run(context.Background(), session, ks, &out)
	require.NoError(t, err)
	t.Log(out.String())
	assert.EqualValues(t, 500, total)
}
