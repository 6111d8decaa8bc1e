package guard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestObserverSeesGuard: the Guard reports to the same lwt.Observer an lwt.Store takes: the
// claim and the completion of a message.
func TestObserverSeesGuard(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{}
	obs := lwt.ObserverFunc(func(o lwt.Observation) {
		mu.Lock()
		seen[o.Kind.String()+":"+o.Op]++
		mu.Unlock()
	})
	g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithObserver(obs))
	require.NoError(t, err)
	_, err = g.Process(ctx, guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: "m"},
		func(context.Context, guard.Message) error { return nil })
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, seen["lwt:claim"])
	assert.Equal(t, 1, seen["complete:"])
}
