package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/kafka/kafkapub"
	"github.com/cassdedup/cassdedup/outbox"
)

// The chain's parts as processes of their own, as a deployment runs them and as the crash
// tests (tests/crashtest) kill them: -role api serves the orders, -role relay publishes the
// committed events, -role consume applies them. Each runs until SIGINT or SIGTERM on a schema
// that already exists, and reports what it does as JSON lines on stdout.

// roleConfig is what a role needs besides its session.
type roleConfig struct {
	brokers    []string
	keyspace   string
	topic      string
	listen     string        // api: host:port to serve on
	group      string        // consume: the consumer group
	counter    string        // consume: the event-log counter the effects go to
	instance   string        // consume: a static group membership id (kgo.InstanceID), or none
	fastPath   bool          // consume: kafkasub.WithFastPath
	relayLease time.Duration // relay: outbox.WithRelayLease
	// relay: outbox.WithPublishTimeout and the Kafka client's delivery timeout (0: the default)
	publishTimeout time.Duration
	// relay, consume: the topic's max.message.bytes when the role creates it (0: the broker's
	// default), so a soak can make events the broker refuses for good.
	maxMessageBytes int
	// consume: the group session timeout; a consumer frozen past it loses its partitions
	sessionTimeout time.Duration
	// consume: once this many records were delivered, report "holding" at the next and wait for
	// a line on stdin before its poll is processed, so a test can freeze the consumer with
	// records in flight.
	holdAfterRecords int64
	// consume: once this many effects were applied, report "holding" at the next and wait for
	// a line on stdin inside the poll's handler, after its effects were recorded and before the
	// guard ends their claims, so a test can kill the consumer between its effects and its marks.
	holdAfterApplied int
	// relay: after the first publish that succeeded, report "holding" and wait for a line on
	// stdin before marking, so a test can kill or freeze the relay between publish and mark.
	holdAfterPublish bool
	// api, relay: the process's clocks run this far off the host's (a broken clock), set
	// through the library's clock options; the api reports its stager's reading ("clock").
	clockOffset time.Duration
}

// Line is one line a role prints.
type Line struct {
	Event  string   `json:"event"`            // listening, published, holding, relay-error, consumed, applied, consumer-error
	N      int      `json:"n,omitempty"`      // consumed: records polled from one partition
	Addr   string   `json:"addr,omitempty"`   // listening: the service's address
	Orders []string `json:"orders,omitempty"` // published: the event key (order) of each message
	Order  string   `json:"order,omitempty"`  // applied
	Err    string   `json:"err,omitempty"`
	Fenced bool     `json:"fenced,omitempty"` // relay-error: a newer relay holds a shard this one worked
	// clock: the stager's measured offset from the cluster's clock and its bound, and the
	// Stages it refused (outbox.ErrClockOffset), reported each second and at the end
	Offset  string `json:"offset,omitempty"`
	Bound   string `json:"bound,omitempty"`
	Refused int64  `json:"refused,omitempty"`
}

// reporter writes Lines from several goroutines.
type reporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (r *reporter) say(l Line) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(l)
}

// runRole runs one part of the chain until ctx ends.
func runRole(ctx context.Context, role string, session *gocql.Session, cfg roleConfig, out io.Writer) error {
	rep := &reporter{enc: json.NewEncoder(out)}
	var err error
	switch role {
	case "api":
		err = serveAPI(ctx, session, cfg, rep)
	case "relay":
		err = runRelay(ctx, session, cfg, rep)
	case "consume":
		err = runConsumer(ctx, session, cfg, rep)
	default:
		return fmt.Errorf("unknown role %q (api, relay or consume)", role)
	}
	if ctx.Err() != nil {
		return nil // asked to stop
	}
	return err
}

func serveAPI(ctx context.Context, session *gocql.Session, cfg roleConfig, rep *reporter) error {
	c := &chain{cfg: config{keyspace: cfg.keyspace, clockOffset: cfg.clockOffset}, session: session}
	srv, addr, err := c.serve(cfg.listen)
	if err != nil {
		return err
	}
	rep.say(Line{Event: "listening", Addr: addr})
	sayClock := func() {
		r := c.box.Clock()
		rep.say(Line{Event: "clock", Offset: r.Offset.String(), Bound: r.Bound.String(), Refused: r.Refusals})
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			sayClock()
		case <-ctx.Done():
		}
	}
	sayClock()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func runRelay(ctx context.Context, session *gocql.Session, cfg roleConfig, rep *reporter) error {
	relayOpts := []outbox.RelayOption{outbox.WithKeyspace(cfg.keyspace), outbox.WithPollInterval(50 * time.Millisecond),
		outbox.WithRelayLease(cfg.relayLease), outbox.WithClock(offsetClock(cfg.clockOffset))}
	if cfg.publishTimeout > 0 {
		relayOpts = append(relayOpts, outbox.WithPublishTimeout(cfg.publishTimeout))
	}
	cl, err := relayClient(ctx, cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	pub, err := kafkapub.New(cl, cfg.topic)
	if err != nil {
		return err
	}
	p := &reportingPublisher{ctx: ctx, pub: pub, rep: rep, hold: cfg.holdAfterPublish, resume: make(chan struct{})}
	relay, err := outbox.NewRelay(session, p, relayOpts...)
	if err != nil {
		return err
	}
	return relay.Run(ctx, func(st outbox.Stats, err error) {
		if err != nil || st.Fenced > 0 {
			l := Line{Event: "relay-error", Fenced: st.Fenced > 0 || errors.Is(err, outbox.ErrFenced)}
			if err != nil {
				l.Err = err.Error()
			}
			rep.say(l)
		}
	})
}

// relayClient is the relay's Kafka client, its topic created. Its publisher gives up on a
// record within the relay's publish timeout.
func relayClient(ctx context.Context, cfg roleConfig) (*kgo.Client, error) {
	opts := append(kafkapub.ClientOpts(), kgo.SeedBrokers(cfg.brokers...))
	if cfg.maxMessageBytes > 0 {
		// Batches no larger than the topic accepts: a batch over it is refused whole, and one
		// record too large would take the others of its batch down with it.
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(cfg.maxMessageBytes)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if err := createTopic(ctx, cl, cfg.topic, cfg.maxMessageBytes); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// reportingPublisher publishes through pub and reports the orders published. With hold, it
// then holds after its first publish until a line arrives on stdin (or the role stops).
type reportingPublisher struct {
	ctx    context.Context // the role's: a hold ends with it
	pub    *kafkapub.Publisher
	rep    *reporter
	hold   bool
	once   sync.Once
	resume chan struct{}
}

// Publish implements outbox.Publisher.
func (p *reportingPublisher) Publish(ctx context.Context, msgs []outbox.Message) error {
	if err := p.pub.Publish(ctx, msgs); err != nil {
		// Some messages may have been accepted beside those refused: report those.
		var perMsg *outbox.PublishErrors
		if errors.As(err, &perMsg) && len(perMsg.Errs) == len(msgs) {
			var orders []string
			for i, e := range perMsg.Errs {
				if e == nil {
					orders = append(orders, msgs[i].Key)
				}
			}
			if len(orders) > 0 {
				p.rep.say(Line{Event: "published", Orders: orders})
			}
		}
		return err
	}
	orders := make([]string, len(msgs))
	for i, m := range msgs {
		orders[i] = m.Key
	}
	p.rep.say(Line{Event: "published", Orders: orders})
	if !p.hold {
		return nil
	}
	p.once.Do(func() {
		p.rep.say(Line{Event: "holding"})
		go func() {
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			close(p.resume)
		}()
	})
	// The hold outlasts the publish deadline on purpose: the relay stays between publish and
	// mark until the test kills it or resumes it (or the role stops).
	select {
	case <-p.resume:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// offsetClock is the host's clock off by d: a process on a host whose clock is broken.
func offsetClock(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// runConsumer consumes until ctx ends. A fetch error is reported and ridden out with the same
// client (see consume); after any other error (a guard call or an offset commit that failed) it
// starts its consumer again, from the committed offsets: they are committed only after the
// guard, so nothing is skipped.
func runConsumer(ctx context.Context, session *gocql.Session, cfg roleConfig, rep *reporter) error {
	c := &chain{cfg: config{brokers: cfg.brokers, keyspace: cfg.keyspace, instance: cfg.instance,
		fastPath: cfg.fastPath, sessionTimeout: cfg.sessionTimeout, holdAfter: cfg.holdAfterRecords, holdAfterApplied: cfg.holdAfterApplied}, session: session, counter: cfg.counter,
		accepted: map[string]time.Time{}, applied: map[string]time.Time{}, runs: map[string]int{},
		report: rep}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.brokers...))
	if err != nil {
		return err
	}
	err = createTopic(ctx, cl, cfg.topic, cfg.maxMessageBytes)
	cl.Close()
	if err != nil {
		return err
	}
	logc, err := newEffectLog(session, cfg.keyspace)
	if err != nil {
		return err
	}
	g, err := guard.New(session, guard.WithKeyspace(cfg.keyspace), guard.WithLease(5*time.Second))
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		err := c.consume(ctx, cfg.topic, cfg.group, g, logc)
		if err == nil || ctx.Err() != nil {
			continue
		}
		rep.say(Line{Event: "consumer-error", Err: err.Error()})
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// createTopic creates topic with 4 partitions unless it exists, with max.message.bytes set to
// maxBytes unless it is 0.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, maxBytes int) error {
	var configs map[string]*string
	if maxBytes > 0 {
		v := strconv.Itoa(maxBytes)
		configs = map[string]*string{"max.message.bytes": &v}
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, configs, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}
