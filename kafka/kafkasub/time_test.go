package kafkasub_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/syncbuf"
	"github.com/cassdedup/cassdedup/kafka/header"
	"github.com/cassdedup/cassdedup/kafka/kafkapub"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/lwt"
)

// logAppendTime is the topic configuration under which the broker stamps every record with
// the time it appended it.
var logAppendTime = map[string]*string{"message.timestamp.type": new("LogAppendTime")}

// poisonTally collects what the poison hook was given.
type poisonTally struct {
	mu   sync.Mutex
	errs []error
}

func (p *poisonTally) hook(_ context.Context, _ *kgo.Record, err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, err)
	return nil
}

func (p *poisonTally) get() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.errs...)
}

// TestBrokerTimeRefused: on a topic with message.timestamp.type=LogAppendTime, the default
// consumer refuses every record with ErrBrokerTime through its poison hook, logs it at level
// ERROR once for the topic, and runs no handler: the broker's times would place two copies of
// one event apart.
func TestBrokerTimeRefused(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, 1, 10, logAppendTime)
	var logs syncbuf.Buffer
	var poison poisonTally
	stop := run(t, f.consumer(f.guard(), f.handler(0, nil), kafkasub.WithPoison(poison.hook),
		kafkasub.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	f.waitFor("every record refused and committed past", func() bool { return len(poison.get()) == len(f.ids) && f.committedAll() })
	stop()
	for _, err := range poison.get() {
		require.ErrorIs(t, err, kafkasub.ErrBrokerTime)
		assert.ErrorContains(t, err, "LogAppendTime")
	}
	assert.Zero(t, f.count(), "no handler ran")
	assert.Equal(t, 1, strings.Count(logs.String(), "level=ERROR msg=\"kafkasub: the topic's records carry the broker's time"), logs.String())
}

// TestHeaderTimeRunsCopiesOnce: on a LogAppendTime topic, every event published twice, the
// copies 1.2 s apart (a relay that republished after a lost acknowledgement), with the guard's
// windows 1 s wide. Placed by the record's timestamp, as Message took it before it checked the
// timestamp's type, each copy lands in another window and both run; placed by the staging time
// in header.Time (WithTimeHeader), each event runs once.
func TestHeaderTimeRunsCopiesOnce(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, 1, 20, logAppendTime)
	time.Sleep(1200 * time.Millisecond)
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.seeds...))
	require.NoError(t, err)
	pub, err := kafkapub.New(cl, f.topic)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(context.Background(), f.msgs))
	cl.Close()
	// A group's first minutes keep the legacy layout (see guard.WithLegacyBatchLayout): 1 s too.
	g, err := guard.New(f.session, guard.WithKeyspace(f.ks), guard.WithBatchWindow(time.Second),
		guard.WithLegacyBatchLayout(time.Second, 1))
	require.NoError(t, err)

	byTimestamp := func(group string, r *kgo.Record) (guard.Message, error) {
		m, err := kafkasub.HeaderTimeMessage(header.Time)(group, r)
		m.Time = r.Timestamp
		return m, err
	}
	phase := func(group string, opt kafkasub.Option) (once, twice int) {
		f.mu.Lock()
		f.group, f.applied = group, map[string]int{}
		f.mu.Unlock()
		stop := run(t, f.consumer(g, f.handler(0, nil), opt))
		f.waitFor("every copy committed past", f.committedAll)
		stop()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, n := range f.applied {
			if n == 1 {
				once++
			} else {
				twice++
			}
		}
		return once, twice
	}
	once, twice := phase(f.group+"-timestamp", kafkasub.WithMessage(byTimestamp))
	t.Logf("by the broker's timestamp: %d events ran once, %d more than once", once, twice)
	assert.Equal(t, len(f.ids), twice, "the hazard: each copy in a window of its own")
	once, twice = phase(f.group+"-header", kafkasub.WithTimeHeader(header.Time))
	t.Logf("by the staging time in %s: %d events ran once, %d more than once", header.Time, once, twice)
	assert.Equal(t, len(f.ids), once)
	assert.Zero(t, twice)
	f.exactlyOnce()
}

// TestInvalidRecordIsPoison: a record the guard refuses as invalid (an id over 255 bytes) goes
// to the poison hook and the offsets move past it; it was delivered again forever, logged only at
// level DEBUG.
func TestInvalidRecordIsPoison(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 5)
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.seeds...))
	require.NoError(t, err)
	long := &kgo.Record{Topic: f.topic, Value: []byte("x"), Headers: []kgo.RecordHeader{{Key: header.ID, Value: bytes.Repeat([]byte("i"), 256)}}}
	require.NoError(t, cl.ProduceSync(context.Background(), long).FirstErr())
	cl.Close()
	var poison poisonTally
	stop := run(t, f.consumer(f.guard(), f.handler(0, nil), kafkasub.WithPoison(poison.hook)))
	f.waitFor("every record and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stop()
	errs := poison.get()
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], guard.ErrInvalidMessage)
	f.exactlyOnce()
}

// TestBadInputRefused: a nil record, a consumer group the guard refuses for every record, a
// header time that is not one, and options that contradict each other are refused with the
// package's errors; none panics and none is found only once records flow.
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	_, err := kafkasub.Message("billing", nil)
	require.ErrorIs(t, err, lwt.ErrInvalidArgument)
	_, err = kafkasub.HeaderTimeMessage(header.Time)("billing", nil)
	require.ErrorIs(t, err, lwt.ErrInvalidArgument)
	_, err = kafkasub.RecordTime(nil)
	require.ErrorIs(t, err, lwt.ErrInvalidArgument)

	g := &guard.Guard{}
	h := func(context.Context, guard.Message) error { return nil }
	client := func(group string) kafkasub.Option {
		return kafkasub.WithClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"))
	}
	for _, group := range []string{strings.Repeat("g", guard.MaxMessageField+1), "billing\xff"} {
		_, err = kafkasub.New(g, h, client(group))
		require.ErrorIs(t, err, kafkasub.ErrInvalidOption, "%q", group)
		require.ErrorIs(t, err, guard.ErrInvalidMessage, "%q", group)
		require.ErrorContains(t, err, "kgo.ConsumerGroup")
	}
	_, err = kafkasub.New(g, h, client("billing"), kafkasub.WithTimeHeader(""))
	require.ErrorIs(t, err, kafkasub.ErrInvalidOption)
	_, err = kafkasub.New(g, h, client("billing"), kafkasub.WithTimeHeader(header.Time), kafkasub.WithMessage(kafkasub.Message))
	require.ErrorIs(t, err, kafkasub.ErrInvalidOption)
	require.ErrorContains(t, err, "WithTimeHeader and WithMessage")

	c, err := kafkasub.New(g, h, client("billing"))
	require.NoError(t, err)
	require.ErrorIs(t, c.Run(nil), lwt.ErrInvalidArgument) //nolint:staticcheck // the nil context is the test
	c.Client().Close()
	var none *kafkasub.Consumer
	require.ErrorIs(t, none.Run(context.Background()), lwt.ErrInvalidArgument)
	assert.Nil(t, none.Client())
}

// TestHeaderTime: the header's value is read as kafkapub writes it (Unix milliseconds in
// decimal) and nothing else; the first header.ID is the event's id (an event's own header
// of that name comes after it).
func TestHeaderTime(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_764_327_000_123)
	rec := func(v ...string) *kgo.Record {
		r := &kgo.Record{Topic: "orders", Headers: []kgo.RecordHeader{{Key: header.ID, Value: []byte("e-1")}, {Key: header.ID, Value: []byte("e-2")}}}
		for _, s := range v {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: header.Time, Value: []byte(s)})
		}
		return r
	}
	read := kafkasub.HeaderTimeMessage(header.Time)
	m, err := read("billing", rec("1764327000123"))
	require.NoError(t, err)
	assert.True(t, m.Time.Equal(at))
	assert.Equal(t, "e-1", m.ID)
	for _, v := range [][]string{nil, {""}, {"abc"}, {"-5"}, {"0"}, {"+1764327000123"}, {"01764327000123"}, {"1764327000123.5"}} {
		_, err := read("billing", rec(v...))
		require.ErrorIs(t, err, kafkasub.ErrNoTime, "%q", v)
	}
	m, err = kafkasub.Message("billing", &kgo.Record{Topic: "orders", Timestamp: at, Headers: rec().Headers})
	require.NoError(t, err, "a timestamp its producer set (CreateTime)")
	assert.True(t, m.Time.Equal(at))
}

// FuzzHeaderTime: a header value is accepted only as the decimal Unix milliseconds kafkapub
// writes, which read back to the same text; nothing panics.
func FuzzHeaderTime(f *testing.F) {
	f.Add("1764327000123")
	f.Add("-1")
	f.Add("+0")
	f.Add("99999999999999999999")
	read := kafkasub.HeaderTimeMessage(header.Time)
	f.Fuzz(func(t *testing.T, v string) {
		r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: header.ID, Value: []byte("e")}, {Key: header.Time, Value: []byte(v)}}}
		m, err := read("billing", r)
		if err == nil && fmt.Sprint(m.Time.UnixMilli()) != v {
			t.Fatalf("%q read as %v", v, m.Time)
		}
	})
}

// TestFutureRecordIsLoud: a record the guard refuses as ahead of the clock (its producer's clock
// an hour fast) holds up its partition until the clock catches up, and the consumer says so at
// level WARN; it did only at level DEBUG.
func TestFutureRecordIsLoud(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.seeds...))
	require.NoError(t, err)
	ahead := &kgo.Record{Topic: f.topic, Value: []byte("x"), Timestamp: time.Now().Add(time.Hour),
		Headers: []kgo.RecordHeader{{Key: header.ID, Value: []byte("from-a-fast-clock")}}}
	require.NoError(t, cl.ProduceSync(context.Background(), ahead).FirstErr())
	cl.Close()
	var logs syncbuf.Buffer
	stop := run(t, f.consumer(f.guard(), f.handler(0, nil),
		kafkasub.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	f.waitFor("the record ahead of the clock, told at WARN", func() bool {
		return f.count() == 1 && strings.Contains(logs.String(), "level=WARN msg=\"kafkasub: redeliver\"")
	})
	stop()
	assert.Contains(t, logs.String(), "in the future")
	assert.False(t, f.committedAll(), "nothing passes it")
}

// TestBrokerTimeHeldByDefault: with the default poison hook, records refused for their broker's
// time are not skipped (that would drop the whole topic): the partition is held, loudly, and a
// consumer of the same group that takes the time from the event (WithTimeHeader) processes
// every one of them once.
func TestBrokerTimeHeldByDefault(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, 1, 5, logAppendTime)
	var logs syncbuf.Buffer
	held := "level=ERROR msg=\"kafkasub: dead-letter\""
	stop := run(t, f.consumer(f.guard(), f.handler(0, nil), kafkasub.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	f.waitFor("the first record held twice", func() bool { return strings.Count(logs.String(), held) >= 2 })
	stop()
	assert.Zero(t, f.count(), "nothing ran")
	assert.False(t, f.committedAll(), "nothing was skipped")
	assert.Contains(t, logs.String(), "record time set by the broker")

	stop = run(t, f.consumer(f.guard(), f.handler(0, nil), kafkasub.WithTimeHeader(header.Time)))
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stop()
	f.exactlyOnce()
}
