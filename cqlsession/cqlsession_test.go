package cqlsession

import (
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecommendedSettings(t *testing.T) {
	c, err := NewCluster([]string{"10.0.0.1", "10.0.0.2:9142"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1", "10.0.0.2:9142"}, c.Hosts)
	assert.Zero(t, c.WriteCoalesceWaitTime, "no coalescing wait on every request")
	assert.Nil(t, c.RetryPolicy, "the driver never re-sends a request")
	assert.False(t, c.DefaultIdempotence, "no speculative re-sends either")
	assert.Equal(t, gocql.Quorum, c.Consistency)
	assert.Equal(t, gocql.Serial, c.SerialConsistency)
	assert.Equal(t, DefaultTimeout, c.Timeout)
	assert.Equal(t, DefaultConnectTimeout, c.ConnectTimeout)
	assert.Nil(t, c.HostFilter, "every datacentre without a local one")
	assert.Equal(t, gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy()), c.PoolConfig.HostSelectionPolicy)
}

func TestLocalDatacentre(t *testing.T) {
	c, err := NewCluster([]string{"h"}, WithLocalDC("dc2"))
	require.NoError(t, err)
	assert.Equal(t, gocql.LocalQuorum, c.Consistency)
	assert.Equal(t, gocql.LocalSerial, c.SerialConsistency)
	assert.Equal(t, gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy("dc2")), c.PoolConfig.HostSelectionPolicy)
	require.NotNil(t, c.HostFilter, "LOCAL_SERIAL rounds stay in the local datacentre")
	assert.True(t, c.HostFilter.Accept(&gocql.HostInfo{}) == false, "a host of no datacentre is not local")

	// SERIAL spans datacentres, so the other ones stay a fallback.
	c, err = NewCluster([]string{"h"}, WithLocalDC("dc2"), WithSerialConsistency(gocql.Serial), WithConsistency(gocql.Quorum))
	require.NoError(t, err)
	assert.Nil(t, c.HostFilter)
	assert.Equal(t, gocql.Serial, c.SerialConsistency)
	assert.Equal(t, gocql.Quorum, c.Consistency)
}

func TestTimeouts(t *testing.T) {
	c, err := NewCluster([]string{"h"}, WithTimeout(3*time.Second), WithConnectTimeout(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, c.Timeout)
	assert.Equal(t, time.Second, c.ConnectTimeout)
}

func TestRefusedSettings(t *testing.T) {
	for name, opts := range map[string][]Option{
		"nil option":                  {nil},
		"empty local dc":              {WithLocalDC(" ")},
		"ANY":                         {WithConsistency(gocql.Any)},
		"a serial level as a default": {WithConsistency(gocql.Consistency(gocql.Serial))},
		"unknown consistency":         {WithConsistency(gocql.Consistency(0x42))},
		"QUORUM as serial":            {WithSerialConsistency(gocql.SerialConsistency(gocql.Quorum))},
		"LOCAL_SERIAL without dc":     {WithSerialConsistency(gocql.LocalSerial)},
		"LOCAL_QUORUM without dc":     {WithConsistency(gocql.LocalQuorum)},
		"zero timeout":                {WithTimeout(0)},
		"negative connect timeout":    {WithConnectTimeout(-time.Second)},
	} {
		_, err := NewCluster([]string{"h"}, opts...)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
	}
	_, err := NewCluster(nil)
	assert.ErrorIs(t, err, ErrInvalidOption, "no hosts")
}

func FuzzConsistencies(f *testing.F) {
	f.Add(uint16(gocql.Quorum), uint16(gocql.Serial), "")
	f.Add(uint16(gocql.LocalQuorum), uint16(gocql.LocalSerial), "dc1")
	f.Fuzz(func(t *testing.T, cl, serial uint16, dc string) {
		opts := []Option{WithConsistency(gocql.Consistency(cl)), WithSerialConsistency(gocql.SerialConsistency(serial))}
		if dc != "" {
			opts = append(opts, WithLocalDC(dc))
		}
		c, err := NewCluster([]string{"h"}, opts...)
		if err != nil {
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if c.WriteCoalesceWaitTime != 0 || c.RetryPolicy != nil {
			t.Fatalf("an accepted setting changed the safety defaults")
		}
		if c.SerialConsistency == gocql.LocalSerial && c.HostFilter == nil {
			t.Fatalf("LOCAL_SERIAL without a local datacentre filter")
		}
	})
}
