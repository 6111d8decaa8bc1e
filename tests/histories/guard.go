package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// The guard's workload: the workers are a broker's consumers that get the messages of the hot
// window again and again (redeliveries, rebalances, a consumer that crashed before its commit).
// The messages of partition 0 go through Guard.Process one at a time, those of partition 1
// through Guard.ProcessBatch in polls of a few: a scope uses one of the two (docs/guard.md says
// why; docs/verification.md has what mixing them on one message did). The handler writes the
// message's effect row under its claim's fence, as docs/guard.md asks of a handler whose second
// run would harm. The checks (checkMessages): no message acknowledged as processed twice, and
// every acknowledged message has its effect and is a duplicate when delivered once more after
// the run.

// messageTopic is the topic of the workload's messages; the group is the run's namespace, so
// each run has scopes of its own.
const messageTopic = "orders"

// pollSize is how many messages a ProcessBatch call delivers at most.
const pollSize = 4

// message is the delivery of the message numbered n: its id and its time are the same on every
// delivery, from every process (the time counts from the run's start on the machine's clock,
// one period a message, as a producer would have stamped it once).
func (c *client) message(n int64) guard.Message {
	return guard.Message{Scope: guard.Scope{Group: c.cfg.namespace, Topic: messageTopic, Partition: int32(n % 2)},
		ID: fmt.Sprintf("m%05d", n), Time: time.Unix(0, c.cfg.runWall).Add(time.Duration(n) * c.cfg.period)}
}

// deliver delivers one hot message of partition 0 with Process, or a poll of up to pollSize
// of partition 1 with ProcessBatch. Each message of a poll is an operation of the history of its
// own, under a process name of its own (the worker's, with the message's place in the poll), so
// invocations pair with completions.
func (c *client) deliver(ctx context.Context, rnd *rand.Rand, proc string, seq int) {
	arg := fmt.Sprintf("%s#%d", proc, seq)
	if rnd.IntN(2) == 0 {
		m := c.message(c.pathIndex(rnd, 0))
		c.rec.add(Entry{Type: "invoke", Proc: proc, Op: "process", Key: m.ID, Arg: arg})
		out, err := c.guard.Process(ctx, m, c.handle(arg))
		c.rec.add(delivered(proc, m.ID, arg, out, err))
		return
	}
	var poll []guard.Message
	seen := map[string]bool{}
	for range 1 + rnd.IntN(pollSize) {
		if m := c.message(c.pathIndex(rnd, 1)); !seen[m.ID] {
			seen[m.ID] = true
			poll = append(poll, m)
		}
	}
	for i, m := range poll {
		c.rec.add(Entry{Type: "invoke", Proc: fmt.Sprintf("%s/m%d", proc, i), Op: "process", Key: m.ID, Arg: arg})
	}
	results, err := c.guard.ProcessBatch(ctx, poll, c.handle(arg))
	for i, m := range poll {
		r := guard.BatchResult{Err: err}
		if err == nil {
			r = results[i]
		}
		c.rec.add(delivered(fmt.Sprintf("%s/m%d", proc, i), m.ID, arg, r.Outcome, r.Err))
	}
}

// pathIndex is a hot message's number on the path of partition (0: Process, 1: ProcessBatch);
// with mixedPaths, any hot message's.
func (c *client) pathIndex(rnd *rand.Rand, partition int64) int64 {
	if c.cfg.mixedPaths {
		return c.hotIndex(rnd)
	}
	return c.hotIndex(rnd)&^1 | partition
}

// handle is the handler: the message's effect row, written under the claim's fence. On the fast
// path there is no claim; the workload does not own its scopes, so every call has one.
func (c *client) handle(arg string) guard.Handler {
	return func(ctx context.Context, m guard.Message) error {
		claim, ok := lwt.ClaimFromContext(ctx)
		if !ok {
			return errors.New("histories: a handler without a claim")
		}
		return writeEffect(ctx, c.session, messageEffectKey(m.Scope, m.ID), claim.Fence, arg)
	}
}

// messageEffectKey is the effect row of a message: the effects table is shared with the
// executor's keys, which start with the namespace and "/k".
func messageEffectKey(s guard.Scope, id string) string {
	return fmt.Sprintf("%s/%s/%d/%s", s.Group, s.Topic, s.Partition, id)
}

// delivered is the completion of a delivery: "processed" when its handler ran now, "duplicate"
// when it had run before, both acknowledged; a refusal that proves nothing ran is a "fail".
func delivered(proc, id, arg string, out guard.Outcome, err error) Entry {
	e := Entry{Proc: proc, Op: "process", Key: id, Arg: arg}
	e.Type, e.Error, e.Msg = classify(err)
	switch {
	case err != nil:
	case out == guard.Processed:
		e.Value = "processed"
	case out == guard.Duplicate:
		e.Value = "duplicate"
	default:
		e.Value = out.String()
	}
	return e
}

// messageState is what a message's last delivery, after the run, found: "duplicate" (its
// handler had run and its record says so), "ran" (the handler ran again) or "" (not known: the
// delivery kept failing); and its effect row.
type messageState struct {
	Redelivery  string
	Effect      string
	EffectFence int64
}

// errRedelivered is what the handler of the last deliveries returns: it only reports that it
// ran, and the message is left unprocessed.
var errRedelivered = errors.New("histories: delivered again after the run")

// redeliverAll delivers every message of the history once more after the run, through the path
// its partition uses, with a handler that only notes that it ran, and reads its effect row;
// each is retried for up to two minutes (a claim of a killed client waits out its lease).
func redeliverAll(s *gocql.Session, ks, ns string, runWall int64, history []Entry) map[string]messageState {
	g, err := guard.New(s, guard.WithKeyspace(ks), guard.WithConsistency(gocql.Quorum), guard.WithSerialConsistency(gocql.Serial))
	if err != nil {
		panic(err) // the keyspace's name is valid: setupKeyspace made it
	}
	c := &client{cfg: clientConfig{namespace: ns, runWall: runWall, period: defaultPeriod}}
	out := map[string]messageState{}
	for _, e := range history {
		var n int64
		if _, done := out[e.Key]; e.Op != "process" || done {
			continue
		}
		if _, err := fmt.Sscanf(e.Key, "m%d", &n); err != nil {
			continue
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			st, err := redeliver(g, s, ks, c.message(n))
			if err == nil || time.Now().After(deadline) {
				out[e.Key] = st
				if err != nil {
					logf("last delivery of message %s: %v", e.Key, err)
				}
				break
			}
			time.Sleep(time.Second)
		}
	}
	return out
}

func redeliver(g *guard.Guard, s *gocql.Session, ks string, m guard.Message) (messageState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st messageState
	ran := func(context.Context, guard.Message) error { st.Redelivery = "ran"; return errRedelivered }
	var err error
	if m.Partition == 0 {
		_, err = g.Process(ctx, m, ran)
	} else {
		var rs []guard.BatchResult
		if rs, err = g.ProcessBatch(ctx, []guard.Message{m}, ran); err == nil {
			err = rs[0].Err
		}
	}
	switch {
	case st.Redelivery == "ran":
	case err != nil:
		return st, err
	default:
		st.Redelivery = "duplicate"
	}
	st.Effect, st.EffectFence, err = readEffect(ctx, s, ks, messageEffectKey(m.Scope, m.ID))
	return st, err
}

// checkMessages: no message acknowledged as processed (its handler run now) twice; every
// acknowledged message's effect is there, and delivered once more after the run it is a
// duplicate (its handler does not run again).
func checkMessages(history []Entry, final map[string]messageState) []violation {
	processed, acked := map[string]int{}, map[string]bool{}
	for _, e := range history {
		if e.Op != "process" || e.Type != "ok" {
			continue
		}
		acked[e.Key] = true
		if e.Value == "processed" {
			processed[e.Key]++
		}
	}
	var vs []violation
	for _, id := range sortedKeys(acked) {
		f := final[id]
		switch {
		case processed[id] > 1:
			vs = append(vs, violation{Check: "handler-once", Key: id, Detail: fmt.Sprintf("%d deliveries ran the handler and were acknowledged as processed", processed[id])})
		case f.Redelivery != "duplicate":
			vs = append(vs, violation{Check: "acknowledged-lost", Key: id, Detail: fmt.Sprintf("acknowledged; delivered again after the run: %q", f.Redelivery)})
		case f.EffectFence == 0:
			vs = append(vs, violation{Check: "effect-lost", Key: id, Detail: "acknowledged, and no effect row"})
		}
	}
	return vs
}
