package slogobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/slogobs"
	"github.com/cassdedup/cassdedup/testnode"
)

// logBuffer collects JSON log records; the observers write from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var r map[string]any
		require.NoError(t, dec.Decode(&r))
		out = append(out, r)
	}
	return out
}

func newLogger(b *logBuffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level}))
}

func TestLevelsAndAttributes(t *testing.T) {
	var b logBuffer
	o, err := slogobs.New(newLogger(&b, slog.LevelDebug), "orders", slogobs.WithSlowLWT(100*time.Millisecond))
	require.NoError(t, err)
	key := lwt.IdempotencyKey("tenant-1", "k-1")
	o.Observe(lwt.Observation{Kind: lwt.ObservedLWT, Key: key, Op: "claim", Applied: true, Latency: 3 * time.Millisecond})
	o.Observe(lwt.Observation{Kind: lwt.ObservedLWT, Key: key, Op: "complete", Applied: true, Latency: 250 * time.Millisecond})
	o.Observe(lwt.Observation{Kind: lwt.ObservedOutcomeUnknown, Key: key, Op: "claim", Err: errors.New("write timeout")})
	o.Observe(lwt.Observation{Kind: lwt.ObservedRelease, Key: key})
	o.Observe(lwt.Observation{Kind: lwt.ObservedEpochRegressed, Key: lwt.Key{"tenant-1"}, Err: lwt.ErrEpochRegressed})
	o.Observe(lwt.Observation{Kind: lwt.ObservedSuperseded, Key: lwt.Key{"tenant-1"}, Op: "renew"})

	recs := b.records(t)
	require.Len(t, recs, 6)
	assert.Equal(t, map[string]any{"level": "DEBUG", "msg": "lwt", "store": "orders", "key": []any{"tenant-1", "k-1"},
		"op": "claim", "applied": true, "latency": float64(3 * time.Millisecond)}, without(recs[0], "time"))
	assert.Equal(t, "WARN", recs[1]["level"], "a slow LWT")
	assert.Equal(t, "WARN", recs[2]["level"])
	assert.Equal(t, "outcome-unknown", recs[2]["msg"])
	assert.Equal(t, "write timeout", recs[2]["error"])
	assert.Equal(t, "INFO", recs[3]["level"])
	assert.Equal(t, "release", recs[3]["msg"])
	assert.Equal(t, "ERROR", recs[4]["level"], "an epoch that went back stalls the scope until an operator acts")
	assert.Equal(t, "epoch-regressed", recs[4]["msg"])
	assert.Equal(t, "WARN", recs[5]["level"])
	assert.Equal(t, "superseded", recs[5]["msg"])
}

func TestOptions(t *testing.T) {
	var b logBuffer
	o, err := slogobs.New(newLogger(&b, slog.LevelInfo), "s", slogobs.WithoutKeys(),
		slogobs.WithLevel(lwt.ObservedClaim, slog.LevelInfo))
	require.NoError(t, err)
	o.Observe(lwt.Observation{Kind: lwt.ObservedClaim, Key: lwt.Key{"secret"}})
	o.Observe(lwt.Observation{Kind: lwt.ObservedComplete, Key: lwt.Key{"secret"}})
	recs := b.records(t)
	require.Len(t, recs, 1, "complete stays at Debug, below the handler")
	assert.Equal(t, "claim", recs[0]["msg"])
	assert.NotContains(t, recs[0], "key")

	_, err = slogobs.New(nil, "s")
	assert.ErrorIs(t, err, slogobs.ErrInvalidOption)
	_, err = slogobs.New(slog.Default(), "s", nil)
	assert.ErrorIs(t, err, slogobs.ErrInvalidOption)
	_, err = slogobs.New(slog.Default(), "s", slogobs.WithSlowLWT(-1))
	assert.ErrorIs(t, err, slogobs.ErrInvalidOption)
	_, err = slogobs.New(slog.Default(), "s", slogobs.WithLevel(lwt.ObservationKind(99), slog.LevelInfo))
	assert.ErrorIs(t, err, slogobs.ErrInvalidOption)
	for k := lwt.ObservedLWT; k <= lwt.ObservedEpochRegressed; k++ {
		_, err := slogobs.New(slog.Default(), "s", slogobs.WithLevel(k, slog.LevelInfo))
		assert.NoError(t, err, "every kind has a default level: %v", k)
	}
}

// One observer implementation for every store, each labelled.
func TestEveryStoreLogsThroughOneObserverType(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	var b logBuffer
	logger := newLogger(&b, slog.LevelDebug)
	obs := func(name string) *slogobs.Observer {
		o, err := slogobs.New(logger, name)
		require.NoError(t, err)
		return o
	}
	ctx := context.Background()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithObserver(obs("idempotency_keys")))
	require.NoError(t, err)
	for range 2 {
		_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("ns", "k"), func(context.Context) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
	}
	g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithObserver(obs("consumer")))
	require.NoError(t, err)
	_, err = g.Process(ctx, guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: "m"}, func(context.Context, guard.Message) error { return nil })
	require.NoError(t, err)
	log, err := events.NewLog(session, events.WithKeyspace(ks), events.WithObserver(obs("pageviews")))
	require.NoError(t, err)
	require.NoError(t, log.Record(ctx, events.Event{Counter: "views", ID: "e1", Delta: 1, Time: time.Now()}))
	cs, err := counters.New(session, counters.WithKeyspace(ks), counters.WithObserver(obs("counters")))
	require.NoError(t, err)
	_, err = cs.Increment(ctx, counters.Op{Counter: "c", ID: "op", Delta: 1})
	require.NoError(t, err)

	seen := map[string][]string{}
	for _, r := range b.records(t) {
		seen[r["store"].(string)] = append(seen[r["store"].(string)], r["msg"].(string)+"/"+str(r["op"]))
	}
	assert.Equal(t, []string{"lwt/claim", "claim/", "lwt/complete", "complete/", "lwt/claim", "replay/"}, seen["idempotency_keys"])
	assert.Equal(t, []string{"lwt/claim", "claim/", "lwt/complete", "complete/"}, seen["consumer"])
	assert.Equal(t, []string{"write/record"}, seen["pageviews"])
	assert.Equal(t, []string{"lwt/claim", "write/increment", "lwt/mark"}, seen["counters"])
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func without(m map[string]any, k string) map[string]any {
	delete(m, k)
	return m
}
