package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// result is what one run of the command printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the command in-process against the test node, with env as its environment and no
// terminal on stdin.
func cli(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return cliWith(t, input{r: strings.NewReader("")}, env, args...)
}

// cliWith is cli with in as stdin.
func cliWith(t *testing.T, in input, env map[string]string, args ...string) result {
	t.Helper()
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "CASSANDRA_HOSTS" {
			return strings.Join(hosts, ",")
		}
		return ""
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, in, &out, &errOut, getenv)
	return result{out.String(), errOut.String(), code}
}

// ok runs the command, requires exit status 0 and returns stdout.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := cli(t, nil, args...)
	require.Equal(t, exitOK, r.code, "cassdedup %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

// okJSON runs the command with -json and decodes its output into v.
func okJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := ok(t, append(args, "-json")...)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}
