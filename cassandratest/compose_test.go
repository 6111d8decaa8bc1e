package cassandratest

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestComposeFileMatchesContainerSetup keeps docker-compose.yml and the testcontainers setup
// on the same image and the same Paxos v2 switch, since no Docker engine runs in our CI.
func TestComposeFileMatchesContainerSetup(t *testing.T) {
	raw, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string   `yaml:"image"`
			Entrypoint  []string `yaml:"entrypoint"`
			Ports       []string `yaml:"ports"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	svc, ok := compose.Services["cassandra"]
	require.True(t, ok, "service cassandra")
	assert.Equal(t, Image, svc.Image)
	assert.Contains(t, svc.Ports, "9042:9042")
	require.Len(t, svc.Entrypoint, 3)
	// Compose escapes $ as $$; unescaped, the command must be the one the tests' container runs.
	assert.Equal(t, paxosV2, strings.ReplaceAll(svc.Entrypoint[2], "$$", "$"))
	assert.Contains(t, strings.Join(svc.Healthcheck.Test, " "), "paxos_variant")
}

func TestKeyspaceNamesAreValidAndUnique(t *testing.T) {
	long := strings.Repeat("VeryLong/Sub Test-Name", 5)
	a, b := keyspaceName(long), keyspaceName(long)
	assert.NotEqual(t, a, b)
	assert.LessOrEqual(t, len(a), 48)
	assert.Regexp(t, `^t_[a-z0-9_]+_[0-9a-f]{12}$`, a)
}
