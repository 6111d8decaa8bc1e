// Package kafkasub consumes a Kafka topic through the consumer guard with franz-go: the
// consumer side of kafkapub (module kafka/kafkapub), whose header names it reads from package
// kafka/header of the library, so it imports nothing of the outbox. A Consumer is a member of a
// consumer group that turns every record into a guard.Message (the id from header.ID, or a
// function of yours; the
// record's timestamp as its Time when its producer set it, or the event's own time from a header
// with WithTimeHeader; the group, topic and partition as its scope), runs each
// partition's records of a poll through Guard.ProcessBatch (Guard.ProcessPoll with NewPoll),
// commits a partition's offset only past records that are done (processed, a duplicate, or
// dead-lettered), and seeks a partition back to its first record that is not, so Kafka
// delivers it again: Kafka has no nack.
//
// With WithFastPath, the consumer declares each assigned partition with Guard.Own, at the
// group's generation as the epoch, before it processes anything of it, and calls Disown when the
// partition is revoked or lost. Own records the ownership on the server under a lease, so a
// consumer expelled from the group that has not noticed yet is fenced: its fast path stops
// before the partition's new owner starts its own (docs/fastpath.md).
//
// # Message times that cannot change
//
// The guard places a message by its Time, so every copy of one event must carry the same one.
// A record whose timestamp the broker set (a topic with message.timestamp.type=LogAppendTime)
// does not: Message refuses it (ErrBrokerTime, through WithPoison, and logged at level ERROR at
// the first of each topic; the default poison hook holds the partition rather than skip every
// record of the topic). On such a topic, or with producers that restamp a re-send, take the
// time from the event: WithTimeHeader(header.Time) reads the staging time kafkapub writes in
// every record.
//
// It lives in a module of its own so the library never requires a Kafka client.
package kafkasub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt"
)

// Errors. Each matches with errors.Is.
var (
	// ErrInvalidOption: a nil guard or handler, a bad option (its error names it), or a client
	// without a consumer group or topics.
	ErrInvalidOption = errors.New("kafkasub: invalid option")
	// ErrNoID: a record has no header.ID (with the default WithMessage). It cannot be
	// deduplicated, so it is handed to WithPoison as a poison record.
	ErrNoID = errors.New("kafkasub: record without an event id")
	// ErrBrokerTime: a record's timestamp was set by the broker (its topic has
	// message.timestamp.type=LogAppendTime), so two copies of one event carry two times, and the
	// guard, which places a message by its time, would run both. Such a record is handed to
	// WithPoison, and the first of each topic is logged at level ERROR. Set the topic to
	// CreateTime, or take the time from the event itself (WithTimeHeader).
	ErrBrokerTime = errors.New("kafkasub: record time set by the broker")
	// ErrNoTime: with WithTimeHeader, a record without the header, or with a value that is not
	// Unix milliseconds; without it, a record without a timestamp (the message format before
	// Kafka 0.10). It is handed to WithPoison as a poison record.
	ErrNoTime = errors.New("kafkasub: record without an event time")
)

// Consumer is one member of a consumer group whose records go through a guard. Run it once.
type Consumer struct {
	g       *guard.Guard
	handler guard.Handler     // New's; nil with NewPoll
	apply   guard.PollHandler // NewPoll's; nil with New
	cfg     config
	client  *kgo.Client
	group   string

	mu        sync.Mutex
	parts     map[partition]*ownership // the partitions assigned now
	warned    map[string]bool          // the topics whose broker time was logged (brokerTime)
	clockSaid time.Time                // the last refusal for the guard's clock logged at Error

	// crash, a test's hook, makes Run stop dead before a poll's commit when it returns true:
	// no commit, no Disown, no leave, as if the process were killed there.
	crash   func() bool
	crashed bool
}

// partition is a topic partition of the group's assignment.
type partition struct {
	topic string
	num   int32
}

// ownership is what the consumer knows of one assigned partition's fast path.
type ownership struct {
	epoch     uint64 // the generation it was assigned at
	owned     bool   // Own succeeded at epoch
	regressed bool   // Own found the generation went back, and said so at Error
}

// New returns a consumer that runs handler through the guard g for the records of the franz-go
// client it makes from WithClient's options, which must name the consumer group
// (kgo.ConsumerGroup) and what to consume (kgo.ConsumeTopics). The consumer sets what its
// guarantees need on top: no autocommit, rebalances only between polls (kgo.BlockRebalanceOnPoll;
// keep handlers well within the group's rebalance timeout) and its assignment callbacks.
func New(g *guard.Guard, handler guard.Handler, opts ...Option) (*Consumer, error) {
	if g == nil || handler == nil {
		return nil, fmt.Errorf("%w: nil guard or handler", ErrInvalidOption)
	}
	return newConsumer(&Consumer{g: g, handler: handler}, opts)
}

// NewPoll is New with one call of apply for each partition's claimed records of a poll
// (Guard.ProcessPoll) instead of a handler call per record, so apply can write a poll's effects
// together (events.Log.RecordBatch), or run the handlers of different keys at once
// (guard.ByKey). Offsets, redelivery and ownership are New's.
func NewPoll(g *guard.Guard, apply guard.PollHandler, opts ...Option) (*Consumer, error) {
	if g == nil || apply == nil {
		return nil, fmt.Errorf("%w: nil guard or poll handler", ErrInvalidOption)
	}
	return newConsumer(&Consumer{g: g, apply: apply}, opts)
}

// newConsumer applies opts to c and makes its client.
func newConsumer(c *Consumer, opts []Option) (*Consumer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c.cfg, c.parts, c.warned = cfg, map[partition]*ownership{}, map[string]bool{}
	kopts := append(append([]kgo.Opt{}, cfg.client...), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.assigned), kgo.OnPartitionsRevoked(c.revoked), kgo.OnPartitionsLost(c.revoked))
	if c.client, err = kgo.NewClient(kopts...); err != nil {
		return nil, fmt.Errorf("%w: WithClient (it needs kgo.SeedBrokers, kgo.ConsumerGroup and kgo.ConsumeTopics): %w", ErrInvalidOption, err)
	}
	c.group, _ = c.client.OptValue(kgo.ConsumerGroup).(string)
	if c.group == "" || len(c.client.GetConsumeTopics()) == 0 && c.client.OptValue(kgo.ConsumeRegex) != true {
		c.client.Close()
		return nil, fmt.Errorf("%w: WithClient needs kgo.ConsumerGroup and kgo.ConsumeTopics", ErrInvalidOption)
	}
	// The guard would refuse every record of a group it cannot name, and the consumer never move.
	if err := guard.ValidateGroup(c.group); err != nil {
		c.client.Close()
		return nil, fmt.Errorf("%w: kgo.ConsumerGroup: the guard refuses it for every record: %w", ErrInvalidOption, err)
	}
	return c, nil
}

// Client is the consumer's franz-go client, for metrics and admin requests. Do not poll it,
// commit with it or close it: Run does.
func (c *Consumer) Client() *kgo.Client {
	if c == nil {
		return nil
	}
	return c.client
}

// Run polls until ctx ends, then disowns the partitions, leaves the group and closes the client,
// and returns nil. Nothing stops it earlier: a fetch error is logged and the client kept (it
// reconnects and rejoins by itself), a record that failed is delivered again after
// WithRetryBackoff, and so is a poison record whose WithPoison hook failed. Call it once. A nil
// Consumer or context gives lwt.ErrInvalidArgument.
func (c *Consumer) Run(ctx context.Context) error {
	if err := argcheck.Call(lwt.ErrInvalidArgument, "*kafkasub.Consumer", c == nil, ctx); err != nil {
		return err
	}
	defer c.close()
	for ctx.Err() == nil {
		fetches := c.client.PollRecords(ctx, c.cfg.maxPoll)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.cfg.log.Error("kafkasub: fetch", "group", c.group, "topic", topic, "partition", p, "err", err)
			}
		})
		polls := byPartition(fetches)
		outs := make([]pollOutcome, len(polls))
		var wg sync.WaitGroup
		for i, p := range polls {
			wg.Go(func() { outs[i] = c.partition(ctx, p) })
		}
		wg.Wait()
		if c.crash != nil && c.crash() {
			c.mu.Lock()
			c.crashed = true
			c.mu.Unlock()
			return nil
		}
		c.settle(ctx, outs)
		c.client.AllowRebalance()
		for _, o := range outs {
			if o.seek != nil {
				if err := loop.Sleep(ctx, c.cfg.backoff); err != nil {
					return nil
				}
				break
			}
		}
	}
	return nil
}

// byPartition returns the records of a poll, one entry per partition in the order fetched. A
// partition's records can come in more than one fetch (its leadership moved between brokers
// while both had a fetch buffered): worked apart, they would run concurrently and out of order,
// and the commit of the later part could pass a record of the earlier part that failed, so a
// crash before its redelivery would skip it.
func byPartition(fetches kgo.Fetches) []kgo.FetchTopicPartition {
	var polls []kgo.FetchTopicPartition
	at := map[partition]int{}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		k := partition{p.Topic, p.Partition}
		if i, ok := at[k]; ok {
			polls[i].Records = append(polls[i].Records, p.Records...)
			return
		}
		at[k] = len(polls)
		p.Records = append([]*kgo.Record(nil), p.Records...) // appended to: not the fetch's own slice
		polls = append(polls, p)
	})
	return polls
}

// pollOutcome is what one partition's records of a poll came to: the last record done in an
// unbroken run from the first (commit past it) and the first that is not (seek back to it).
type pollOutcome struct {
	done, seek *kgo.Record
}

// settle commits the polls' done records and seeks the partitions that have a record to
// redeliver back to it. Both happen before the rebalance the poll blocked, so the next owner of
// a partition starts from the committed offset of the records this consumer finished.
func (c *Consumer) settle(ctx context.Context, outs []pollOutcome) {
	var done []*kgo.Record
	seeks := map[string]map[int32]kgo.EpochOffset{}
	for _, o := range outs {
		if o.done != nil {
			done = append(done, o.done)
		}
		if r := o.seek; r != nil {
			if seeks[r.Topic] == nil {
				seeks[r.Topic] = map[int32]kgo.EpochOffset{}
			}
			seeks[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset}
		}
	}
	if len(done) > 0 {
		// A failed commit loses nothing: the records are redelivered and found duplicates.
		if err := c.client.CommitRecords(context.WithoutCancel(ctx), done...); err != nil {
			c.cfg.log.Warn("kafkasub: commit", "group", c.group, "err", err)
		}
	}
	if len(seeks) > 0 {
		c.client.SetOffsets(seeks)
	}
}

// partition runs one partition's records of a poll through the guard.
func (c *Consumer) partition(ctx context.Context, p kgo.FetchTopicPartition) pollOutcome {
	recs := p.Records
	if !c.own(ctx, p.Topic, p.Partition) {
		return pollOutcome{seek: recs[0]}
	}
	msgs, bad := c.messages(recs)
	var results []guard.BatchResult
	var err error
	if c.apply != nil {
		results, err = c.g.ProcessPoll(ctx, msgs, c.apply)
	} else {
		results, err = c.g.ProcessBatch(ctx, msgs, c.handler)
	}
	if errors.Is(err, guard.ErrClockOffset) {
		c.clockRefused(ctx, "process", p.Topic, p.Partition, err)
		return pollOutcome{seek: recs[0]}
	}
	if err != nil {
		c.cfg.log.Error("kafkasub: process", "group", c.group, "topic", p.Topic, "partition", p.Partition, "err", err)
		return pollOutcome{seek: recs[0]}
	}
	var out pollOutcome
	for i, res := range results {
		res = poisoned(res, bad[i])
		if c.cfg.results != nil {
			c.cfg.results(recs[i], res)
		}
		if out.seek != nil {
			continue // delivered again after the first record to redeliver
		}
		switch res.Outcome {
		case guard.Processed, guard.Duplicate:
			out.done = recs[i]
		case guard.Poison:
			if err := c.cfg.poison(ctx, recs[i], res.Err); err != nil {
				c.cfg.log.Error("kafkasub: dead-letter", "group", c.group, "topic", p.Topic, "partition", p.Partition,
					"offset", recs[i].Offset, "err", err)
				out.seek = recs[i]
				continue
			}
			out.done = recs[i]
		default:
			if ctx.Err() == nil {
				c.cfg.log.Log(ctx, redeliverLevel(res.Err), "kafkasub: redeliver", "group", c.group, "topic", p.Topic,
					"partition", p.Partition, "offset", recs[i].Offset, "outcome", res.Outcome, "err", res.Err)
			}
			out.seek = recs[i]
		}
	}
	return out
}

// messages turns recs into the guard's messages. bad holds the errors of the records the message
// function refused; their messages are left invalid, so the guard stores nothing for them.
func (c *Consumer) messages(recs []*kgo.Record) (msgs []guard.Message, bad map[int]error) {
	msgs, bad = make([]guard.Message, len(recs)), map[int]error{}
	for i, r := range recs {
		m, err := c.cfg.message(c.group, r)
		if err != nil {
			bad[i] = err
			if errors.Is(err, ErrBrokerTime) {
				c.brokerTime(r.Topic, err)
			}
			continue
		}
		msgs[i] = m
	}
	return msgs, bad
}

// brokerTime logs, once per topic, that its records carry the broker's time: each is refused
// (the poison hook gets it), so the topic's configuration must change, or the consumer's
// options (WithTimeHeader).
func (c *Consumer) brokerTime(topic string, err error) {
	c.mu.Lock()
	first := !c.warned[topic]
	c.warned[topic] = true
	c.mu.Unlock()
	if first {
		c.cfg.log.Error("kafkasub: the topic's records carry the broker's time, and each is refused as poison", "group", c.group,
			"topic", topic, "err", err)
	}
}

// poisoned returns res as Poison when its record can never be processed: the message function
// refused it (err), or the guard refused its message as invalid (an id over 255 bytes or not
// UTF-8, a payload over the guard's limit, no time), which every delivery would meet again. A
// message ahead of the clock (guard.ErrFutureMessage) is not: the clock catches up with it.
func poisoned(res guard.BatchResult, err error) guard.BatchResult {
	if err != nil {
		return guard.BatchResult{Outcome: guard.Poison, Err: err}
	}
	invalid := errors.Is(res.Err, guard.ErrInvalidMessage) && !errors.Is(res.Err, guard.ErrFutureMessage) ||
		errors.Is(res.Err, guard.ErrPayloadTooLarge)
	if res.Outcome == guard.Failed && invalid {
		return guard.BatchResult{Outcome: guard.Poison, Err: res.Err}
	}
	return res
}

// redeliverLevel is the level at which a record to deliver again is logged: WARN when the guard
// refused its message as ahead of the clock, since it holds up its partition until the clock
// catches up (a producer's clock ahead, a time in the wrong unit); DEBUG for what passes by
// itself (a failed handler retried, a message another consumer holds).
func redeliverLevel(err error) slog.Level {
	if errors.Is(err, guard.ErrFutureMessage) {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// own makes sure, with the fast path on, that the guard owns the partition at the generation it
// was assigned at before anything of it is processed, and reports whether its records may be
// processed now. Own waits for a previous owner's lease; a failure is retried at the next poll.
func (c *Consumer) own(ctx context.Context, topic string, num int32) bool {
	if c.cfg.preCheck == nil {
		return true
	}
	c.mu.Lock()
	o := c.parts[partition{topic, num}]
	c.mu.Unlock()
	if o == nil {
		return false // revoked meanwhile
	}
	if o.owned {
		return true
	}
	scope := guard.Scope{Group: c.group, Topic: topic, Partition: num}
	pre, err := c.cfg.preCheck(scope)
	if err == nil {
		err = c.g.Own(ctx, scope, o.epoch, pre)
	}
	if err != nil {
		c.ownFailed(ctx, scope, o, err)
		c.g.Disown(scope)
		return false
	}
	c.mu.Lock()
	o.owned = true
	c.mu.Unlock()
	return true
}

// ownFailed logs why Own failed: at Error, with the repair, the first time an assignment finds
// the group's generation went back below the one the owners table recorded, since then nothing
// can own the partition until an operator forgets its owners (later polls at Debug: it is
// counted, lwt Stats.EpochRegressed); a refusal for the guard's clock as clockRefused does; at
// Warn otherwise (retried at the next poll).
func (c *Consumer) ownFailed(ctx context.Context, scope guard.Scope, o *ownership, err error) {
	attrs := []any{"group", c.group, "topic", scope.Topic, "partition", scope.Partition, "epoch", o.epoch, "err", err}
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, guard.ErrClockOffset):
		c.clockRefused(ctx, "own", scope.Topic, scope.Partition, err)
	case errors.Is(err, lwt.ErrEpochRegressed):
		c.mu.Lock()
		first := !o.regressed
		o.regressed = true
		c.mu.Unlock()
		level := slog.LevelDebug
		if first {
			level = slog.LevelError
		}
		c.cfg.log.Log(ctx, level, "kafkasub: own: the group's generation went back below the one recorded for the partition "+
			"(the group was deleted or expired and made again, mirrored to another cluster, or switched to KIP-848), "+
			"so nothing can own it and its records wait: once no consumer of the group's old generations runs, "+
			"run `cassdedup owners forget GROUP -yes` (docs/operating.md)", attrs...)
	default:
		c.cfg.log.Warn("kafkasub: own", attrs...)
	}
}

// clockRefused logs that the guard refused a poll's records (or their partition's Own) because
// its offset from the cluster's clock is not known within its limit: the records are sought
// back to and delivered again after the retry backoff, and nothing of them ran. At Error at
// most once a minute (each poll of each partition meets it until the clock is measured again),
// at Debug in between.
func (c *Consumer) clockRefused(ctx context.Context, what, topic string, num int32, err error) {
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	loud := c.clockSaid.IsZero() || time.Since(c.clockSaid) >= time.Minute
	if loud {
		c.clockSaid = time.Now()
	}
	c.mu.Unlock()
	level := slog.LevelDebug
	if loud {
		level = slog.LevelError
	}
	c.cfg.log.Log(ctx, level, "kafkasub: "+what+": the guard refused the records, its clock's offset from the cluster's "+
		"not known within its limit; they are delivered again until it is (guard.Guard.Clock, "+
		"`cassdedup clock offset`, docs/operating.md)", "group", c.group, "topic", topic, "partition", num, "err", err)
}

// assigned records the generation each new partition is assigned at; its Own waits for the
// first poll that returns its records, so a slow warm-up never holds up the group's protocol.
func (c *Consumer) assigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	_, gen := cl.GroupMetadata()
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, nums := range assigned {
		for _, n := range nums {
			c.parts[partition{topic, n}] = &ownership{epoch: uint64(max(gen, 0))}
		}
	}
}

// revoked disowns the partitions revoked or lost: from now on the guard takes none of their
// messages on the fast path, and their server leases are released for the next owner.
func (c *Consumer) revoked(_ context.Context, _ *kgo.Client, gone map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return
	}
	for topic, nums := range gone {
		for _, n := range nums {
			if o := c.parts[partition{topic, n}]; o != nil && o.owned {
				c.g.Disown(guard.Scope{Group: c.group, Topic: topic, Partition: n})
			}
			delete(c.parts, partition{topic, n})
		}
	}
}

// close disowns what is still owned, leaves the group and closes the client.
func (c *Consumer) close() {
	c.client.CloseAllowingRebalance()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return
	}
	for p, o := range c.parts {
		if o.owned {
			c.g.Disown(guard.Scope{Group: c.group, Topic: p.topic, Partition: p.num})
		}
		delete(c.parts, p)
	}
}

// PreCheck makes the pre-check of a partition the consumer was assigned (WithFastPath):
// typically bloom.NewPreCheck sized for the partition's rate over the pre-check's horizon.
type PreCheck = func(scope guard.Scope) (lwt.PreCheck, error)
