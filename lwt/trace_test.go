package lwt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spanLog records the phases a SpanObserver is told about, as "start phase" and "end phase".
type spanLog struct {
	mu     sync.Mutex
	events []string
}

func (l *spanLog) Observe(Observation) {}

type spanKey struct{}

func (l *spanLog) StartSpan(ctx context.Context, phase string, _ Key) (context.Context, func(error)) {
	l.add("start " + phase + " in " + fmt.Sprint(ctx.Value(spanKey{})))
	return context.WithValue(ctx, spanKey{}, phase), func(err error) {
		l.add(fmt.Sprintf("end %s: %v", phase, err))
	}
}

func (l *spanLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *spanLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.events
	l.events = nil
	return e
}

func TestSpanObserverSeesThePhases(t *testing.T) {
	t.Parallel()
	var log spanLog
	s, _, _ := newTestStore(t, WithObserver(&log))
	ctx := ctxT(t)
	key := IdempotencyKey("ns", "traced")
	_, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		assert.Equal(t, "run", ctx.Value(spanKey{}), "fn runs under the run span")
		_, ok := ClaimFromContext(ctx)
		assert.True(t, ok)
		return []byte("v"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"start execute in <nil>", "start claim in execute", "end claim: <nil>",
		"start run in execute", "end run: <nil>", "start commit in execute", "end commit: <nil>", "end execute: <nil>",
	}, log.take())

	_, err = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"start execute in <nil>", "start claim in execute", "end claim: <nil>", "end execute: <nil>"}, log.take(), "a replay")

	boom := errors.New("boom")
	_, err = s.ExecuteOnce(ctx, IdempotencyKey("ns", "failing"), func(context.Context) ([]byte, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []string{
		"start execute in <nil>", "start claim in execute", "end claim: <nil>",
		"start run in execute", "end run: boom", "start commit in execute", "end commit: boom", "end execute: boom",
	}, log.take(), "the release is the commit")

	assert.Panics(t, func() {
		_, _ = s.ExecuteOnce(ctx, IdempotencyKey("ns", "panics"), func(context.Context) ([]byte, error) { panic("bad") })
	})
	got := log.take()
	assert.Contains(t, got, "end run: lwt: panic: bad")
	assert.Equal(t, "end execute: <nil>", got[len(got)-1], "every span ends")
}
