package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClockOffsetCommand measures this host against the test node, which runs on it: an offset
// within its bound of zero is "ok" (exit 0); a -max-offset below the bound is exit 3.
func TestClockOffsetCommand(t *testing.T) {
	t.Parallel()
	var got struct {
		Offset       float64 `json:"offset_seconds"`
		Bound        float64 `json:"bound_seconds"`
		Off          bool
		Measurements []struct {
			Offset float64 `json:"offset_seconds"`
		}
	}
	okJSON(t, &got, "clock", "offset", "-n", "3", "-keyspace", "system")
	assert.Len(t, got.Measurements, 3)
	assert.False(t, got.Off)
	assert.Positive(t, got.Bound)
	assert.LessOrEqual(t, got.Offset, got.Bound+0.005, "the node runs on this host")
	assert.GreaterOrEqual(t, got.Offset, -got.Bound-0.005)

	r := cli(t, nil, "clock", "offset", "-n", "1", "-max-offset", "1ns", "-keyspace", "system")
	require.Equal(t, exitStalled, r.code, r.stderr)
	assert.Contains(t, r.stdout, "OFF: may be ")
	assert.Contains(t, r.stderr, "clock off: this host's clock is ")

	r = cli(t, nil, "clock", "offset", "-n", "0", "-keyspace", "system")
	assert.Equal(t, exitUsage, r.code, r.stderr)
}
