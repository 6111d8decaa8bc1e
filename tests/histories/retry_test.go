package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeldClaimsAreTheCallsInFlight(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p1.1.jsonl")
	rec, err := newRecorder(file)
	require.NoError(t, err)
	rec.add(Entry{Type: "invoke", Proc: "p1.1/w0", Op: "exec", Key: "k1"})
	rec.add(Entry{Type: "effect", Proc: "p1.1/w0", Op: "effect", Key: "k1"})
	rec.add(Entry{Type: "invoke", Proc: "p1.1/w1", Op: "exec", Key: "k2"})
	rec.add(Entry{Type: "invoke", Proc: "p1.1/w2", Op: "exec", Key: "k3"})
	rec.add(Entry{Type: "effect", Proc: "p1.1/w2", Op: "effect", Key: "k3"})
	rec.add(Entry{Type: "ok", Proc: "p1.1/w2", Op: "exec", Key: "k3"})
	rec.add(Entry{Type: "invoke", Proc: "p1.1/w3", Op: "read", Key: "k4"})
	require.NoError(t, rec.close())
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"type":"invoke","process":"p1.1/w4","op":"ex`) // a line being written
	require.NoError(t, err)
	require.NoError(t, f.Close())

	held := map[string]bool{}
	for _, c := range heldClaims(file) {
		held[c.key] = c.effect != 0
	}
	assert.Equal(t, map[string]bool{"k1": true, "k2": false}, held, "the calls in flight, and whether each wrote its effect")
	assert.True(t, awaitHeldEffect(file, 0), "w0's effect was written just now")
	assert.Empty(t, heldClaims(filepath.Join(t.TempDir(), "none")), "no history yet")
}

func TestRetriesEachKeyUntilACallReturns(t *testing.T) {
	file := filepath.Join(t.TempDir(), "retry")
	require.NoError(t, writeRetries(file, "p1", []string{"k1", "k2"}))
	b, err := os.ReadFile(file)
	require.NoError(t, err)

	own := newRetries("p1.2")
	own.set(b)
	assert.Empty(t, own.take(), "a paused process does not retry its own keys")

	r := newRetries("p0.1")
	r.set(b)
	first, second := r.take(), r.take()
	assert.ElementsMatch(t, []string{"k1", "k2"}, []string{first, second})
	assert.Empty(t, r.take(), "both keys are taken")
	r.finish(first, false)
	assert.Equal(t, first, r.take(), "a call that did not return is retried")
	r.finish(first, true)
	r.set(b)
	assert.Empty(t, r.take(), "a key whose call returned stays done while it is listed")

	require.NoError(t, writeRetries(file, "", nil))
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	r.set(b)
	r.finish(second, false)
	assert.Empty(t, r.take(), "the pause ended: nothing to retry")
}
