package bench

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionChoice: the benchmark runs on the recommended session unless -driver-defaults
// asks for gocql's own, and the report says which.
func TestSessionChoice(t *testing.T) {
	c, err := ParseFlags([]string{"-rate", "0"}, noEnv, Catalog())
	require.NoError(t, err)
	cl, info, err := newCluster(c, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cl.WriteCoalesceWaitTime)
	assert.Nil(t, cl.RetryPolicy)
	cc := clientConfig(c, cl, info)
	assert.Equal(t, "recommended (cqlsession)", cc.Session)
	assert.Equal(t, "0s", cc.WriteCoalesce)
	assert.Equal(t, "token-aware round-robin", cc.HostPolicy)

	c, err = ParseFlags([]string{"-rate", "0", "-driver-defaults"}, noEnv, Catalog())
	require.NoError(t, err)
	cl, info, err = newCluster(c, io.Discard)
	require.NoError(t, err)
	assert.Nil(t, cl.RetryPolicy, "no retries either way: the benchmark counts every failure")
	cc = clientConfig(c, cl, info)
	assert.Equal(t, "gocql defaults", cc.Session)
	assert.Equal(t, "200µs", cc.WriteCoalesce)
	assert.Equal(t, "round-robin", cc.HostPolicy)
}
