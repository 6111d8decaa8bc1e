package testnode

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostsWithoutEnvironmentNamesTheRemedy(t *testing.T) {
	t.Setenv("CASSANDRA_HOSTS", " , ")
	_, err := Hosts()
	require.ErrorIs(t, err, errNoHosts)
	require.ErrorContains(t, err, "make cassandra-up")

	t.Setenv("CASSANDRA_HOSTS", " 127.0.0.1:9042 ,127.0.0.2")
	hosts, err := Hosts()
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:9042", "127.0.0.2"}, hosts)
}
