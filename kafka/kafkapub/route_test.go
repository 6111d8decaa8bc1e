package kafkapub

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestRouteByType publishes the events of one operation to a topic per type, with one event
// whose route names no topic: the routed events are acknowledged in their type's topic, and
// the unroutable one fails alone, as a rejection the relay parks.
func TestRouteByType(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := testnode.KafkaBrokers(t)
	prefix := fmt.Sprintf("route-%d.", time.Now().UnixNano())
	cl := newClient(t, kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	placed, paid := prefix+"order.placed", prefix+"order.paid"
	_, err := adm.CreateTopics(ctx, 1, 1, nil, placed, paid)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), placed, paid) })

	route := ByType(prefix)
	pub, err := New(cl, "", WithRoute(func(m outbox.Message) string {
		if m.Type == "order.lost" {
			return ""
		}
		return route(m)
	}))
	require.NoError(t, err)
	at := time.Now().Truncate(time.Millisecond)
	msgs := []outbox.Message{
		{ID: outbox.EventID("shop", "o-1", 0), Type: "order.placed", Key: "o-1", Payload: []byte("a"), StagedAt: at},
		{ID: outbox.EventID("shop", "o-1", 1), Sequence: 1, Type: "order.lost", Key: "o-1", StagedAt: at},
		{ID: outbox.EventID("shop", "o-1", 2), Sequence: 2, Type: "order.paid", Key: "o-1", Payload: []byte("b"), StagedAt: at},
	}
	err = pub.Publish(ctx, msgs)
	var pe *outbox.PublishErrors
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Errs, 3)
	assert.NoError(t, pe.Errs[0])
	assert.ErrorIs(t, pe.Errs[1], ErrNoRoute)
	assert.ErrorIs(t, pe.Errs[1], outbox.ErrRejected, "the relay parks it: no retry can route it")
	assert.NoError(t, pe.Errs[2])

	cons := newClient(t, kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(placed, paid), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	for len(got) < 2 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r.Topic })
	}
	assert.Equal(t, map[string]string{"a": placed, "b": paid}, got)
}

// TestNewRefusesBadArguments: each bad argument or option is an ErrInvalidOption that names it.
func TestNewRefusesBadArguments(t *testing.T) {
	cl := newClient(t, kgo.SeedBrokers("127.0.0.1:1"))
	for name, c := range map[string]struct {
		client *kgo.Client
		topic  string
		opts   []Option
		says   string
	}{
		"nil client":     {nil, "t", nil, "nil client"},
		"no topic":       {cl, "", nil, "no WithRoute"},
		"bad topic":      {cl, "a/b", nil, "'/' is not allowed"},
		"nil route":      {cl, "", []Option{WithRoute(nil)}, "WithRoute(nil)"},
		"nil option":     {cl, "t", []Option{nil}, "option 0"},
		"topic too long": {cl, strings.Repeat("x", 250), nil, "250 characters"},
		"dot topic":      {cl, "..", nil, `".."`},
	} {
		_, err := New(c.client, c.topic, c.opts...)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
		assert.ErrorContains(t, err, c.says, name)
	}
	_, err := New(cl, "", WithRoute(ByType("x.")))
	assert.NoError(t, err, "a route needs no default topic")
}

// FuzzValidTopic: any string is judged without a panic, and an accepted one keeps Kafka's rules.
func FuzzValidTopic(f *testing.F) {
	for _, s := range []string{"", ".", "..", "orders", "a/b", "outbox.event.order-placed_1", strings.Repeat("x", 250), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := validTopic(s); err != nil {
			return
		}
		if s == "" || len(s) > 249 || s == "." || s == ".." {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if !(r < 128 && (r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')) {
				t.Fatalf("accepted %q with %q", s, r)
			}
		}
	})
}
