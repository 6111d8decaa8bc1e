package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/schema"
)

// startNode starts a node of its own with scripts/cassandra/node.sh and the given settings on
// address and ports, and stops it when the test ends. It returns the node's run directory.
// Without Java it fails under CI=true and skips elsewhere.
func startNode(t *testing.T, address, cqlPort, storagePort string, settings ...string) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test starts its own Cassandra node and needs Java 17: " + err.Error())
		}
		t.Skip("no Java 17 to start a Cassandra node with: " + err.Error())
	}
	dir := t.TempDir()
	env := append(os.Environ(), "CASSANDRA_ADDRESS="+address, "CASSANDRA_CQL_PORT="+cqlPort,
		"CASSANDRA_STORAGE_PORT="+storagePort, "CASSANDRA_RUN_DIR="+dir, "CASSANDRA_HEAP=768M")
	env = append(env, settings...)
	node := func(verb string) ([]byte, error) {
		cmd := exec.Command("../../scripts/cassandra/node.sh", verb)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	t.Cleanup(func() {
		if out, err := node("down"); err != nil {
			t.Errorf("stop the node: %v\n%s", err, out)
		}
	})
	out, err := node("up")
	require.NoError(t, err, "start the node:\n%s", out)
	return dir
}

// upToDate is what schema status says of a keyspace with every migration applied.
func upToDate(t *testing.T) string {
	all, err := schema.Migrations()
	require.NoError(t, err)
	return fmt.Sprintf("%d migrations, 0 pending, 0 changed", len(all))
}

// TestSecuredNode runs the commands against a node of its own with password authentication and
// TLS both on: a node's start costs a loaded two-core machine most of a minute, so the two
// checks share one. Each passes the other's setting as a user of such a node would.
func TestSecuredNode(t *testing.T) {
	t.Parallel()
	dir := startNode(t, "127.0.0.31", "9231", "7231", "CASSANDRA_AUTH=1", "CASSANDRA_TLS=1")
	ca := filepath.Join(dir, "tls", "node.pem")
	t.Run("password authentication", func(t *testing.T) { passwordAuthentication(t, ca) })
	t.Run("TLS", func(t *testing.T) { encryption(t, ca) })
}

// passwordAuthentication: the credentials are asked for, checked, and taken from flags and the
// environment; ca lets the commands connect over TLS.
func passwordAuthentication(t *testing.T, ca string) {
	node := []string{"-hosts", "127.0.0.31:9231", "-keyspace", "secured", "-tls-ca", ca}

	r := cli(t, nil, append([]string{"schema", "status"}, node...)...)
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "authentication required")
	r = cli(t, nil, append([]string{"schema", "status", "-username", "cassandra", "-password", "wrong"}, node...)...)
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "password are incorrect")

	// The password from the environment, the user from a flag.
	secret := map[string]string{"CASSANDRA_PASSWORD": "cassandra"}
	r = cli(t, secret, append([]string{"schema", "apply", "-username", "cassandra"}, node...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "007_epoch_columns.cql")
	secret["CASSANDRA_USERNAME"] = "cassandra"
	r = cli(t, secret, append([]string{"schema", "status"}, node...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, upToDate(t))
	r = cli(t, secret, append([]string{"keys", "stuck"}, node...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "scanned 0 records in 64 token ranges")
}

// encryption: a plain connection, an unknown authority and a name the certificate does not
// hold are refused; the node's CA, or no verification with a warning, connect. The credentials
// come from the environment.
func encryption(t *testing.T, ca string) {
	login := map[string]string{"CASSANDRA_USERNAME": "cassandra", "CASSANDRA_PASSWORD": "cassandra"}
	node := []string{"-hosts", "127.0.0.31:9231", "-keyspace", "encrypted", "-connect-timeout", "3s"}
	status := func(extra ...string) result {
		return cli(t, login, append(append([]string{"schema", "status"}, node...), extra...)...)
	}

	assert.Equal(t, exitFailure, status().code, "a plain connection is refused")
	r := status("-tls")
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "certificate signed by unknown authority", "the system's roots do not know the test key pair")
	r = status("-tls-ca", ca, "-tls-server-name", "db.example.com")
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "db.example.com", "the certificate names 127.0.0.31 and localhost only")

	r = cli(t, login, append([]string{"schema", "apply", "-tls-ca", ca}, node...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = status("-tls-ca", ca, "-tls-server-name", "localhost")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, upToDate(t))
	r = status("-tls-insecure-skip-verify")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: TLS certificates are not verified")
}
