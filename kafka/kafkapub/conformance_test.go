package kafkapub

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/kafka/header"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/outbox/outboxtest"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestConformance runs the publisher conformance suite against the broker: each sub-test gets
// a topic of three partitions of its own.
func TestConformance(t *testing.T) {
	seeds := testnode.KafkaBrokers(t)
	outboxtest.TestPublisher(t, func(t *testing.T) outboxtest.Setup {
		topic := fmt.Sprintf("conform-%d", time.Now().UnixNano())
		cl := newClient(t, kgo.SeedBrokers(seeds...))
		adm := kadm.NewClient(cl)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := adm.CreateTopic(ctx, 3, 1, nil, topic)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topic) })
		pub, err := New(cl, topic)
		require.NoError(t, err)
		// A topic that does not exist: franz-go does not ask the broker to create it, and fails
		// the records once its metadata retries are spent.
		refused, err := New(cl, topic+"-missing")
		require.NoError(t, err)
		cons := newClient(t, kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		return outboxtest.Setup{Publisher: pub, Refused: refused, Stalled: stalled(t), Receive: reader(cons)}
	})
}

// newClient returns a client closed when t ends, with the producer options a Publisher needs:
// a delivery timeout long enough for a busy test broker's first produce to a new topic (the
// suite checks the publisher, not the relay's deadline).
func newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append(ClientOpts(), opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// reader returns the records of cons decoded into messages, keeping what one poll brought
// beyond the n asked for until the next call.
func reader(cons *kgo.Client) func(ctx context.Context, n int) ([]outbox.Message, error) {
	var kept []outbox.Message
	return func(ctx context.Context, n int) ([]outbox.Message, error) {
		for len(kept) < n {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				return nil, err
			}
			for _, r := range fs.Records() {
				m, err := decode(r)
				if err != nil {
					return nil, err
				}
				kept = append(kept, m)
			}
		}
		out := kept[:n:n]
		kept = kept[n:]
		return out, nil
	}
}

// decode is the message that Record made r from: the event's own headers apart from ours.
func decode(r *kgo.Record) (outbox.Message, error) {
	m := outbox.Message{Payload: r.Value, StagedAt: r.Timestamp}
	for _, h := range r.Headers {
		switch h.Key {
		case header.ID:
			m.ID = string(h.Value)
		case header.Type:
			m.Type = string(h.Value)
		case header.Seq:
			seq, err := strconv.Atoi(string(h.Value))
			if err != nil {
				return m, fmt.Errorf("record at offset %d: %s %q: %w", r.Offset, header.Seq, h.Value, err)
			}
			m.Sequence = seq
		case header.Time:
			ms, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil || ms != r.Timestamp.UnixMilli() {
				return m, fmt.Errorf("record at offset %d: %s %q is not its timestamp %v", r.Offset, header.Time, h.Value, r.Timestamp)
			}
		default:
			if m.Headers == nil {
				m.Headers = map[string]string{}
			}
			m.Headers[h.Key] = string(h.Value)
		}
	}
	if string(r.Key) != m.ID {
		m.Key = string(r.Key) // an event without a key is partitioned by its id
	}
	return m, nil
}

// stalled returns a publisher to a broker that accepts connections and never answers.
func stalled(t *testing.T) outbox.Publisher {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	pub, err := New(newClient(t, kgo.SeedBrokers(ln.Addr().String())), "stalled")
	require.NoError(t, err)
	return pub
}
