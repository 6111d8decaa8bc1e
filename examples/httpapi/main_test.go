package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

func TestRunAgainstNode(t *testing.T) {
	session, ks := testnode.NewSession(t)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), session, ks, &out))
	got := out.String()
	t.Log("\n" + got)
	assert.Regexp(t, `retry while the first runs\s+-> 409 replayed=false problem TypeInProgress, Retry-After [1-9]`, got)
	assert.Regexp(t, `first attempt\s+-> 201 replayed=false {"charge":"ch_1"}`, got)
	assert.Regexp(t, `retry after a lost response\s+-> 201 replayed=true  {"charge":"ch_1"}`, got)
	assert.Regexp(t, `same key, different request\s+-> 422 replayed=false problem TypeKeyReuse`, got)
	assert.Regexp(t, `no key\s+-> 400 replayed=false problem TypeKeyMissing`, got)
	assert.Regexp(t, `another client, same key\s+-> 201 replayed=false {"charge":"ch_2"}`, got, "never the first client's response")
	assert.Regexp(t, `no credentials, same key\s+-> 401 replayed=false problem TypeUnauthenticated`, got)
	assert.Contains(t, got, "charges made: 2")
}
