package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/outbox"
)

// errBrokerAway is the recording publisher's simulated outage: one call in eight fails before
// it records anything, as a broker that is briefly unreachable would.
var errBrokerAway = errors.New("histories: broker unavailable")

// recordingPublisher is the relay's broker: it writes each message it accepts into the
// process's history (type "publish": the operation's key, the event id, its payload).
type recordingPublisher struct {
	mu   sync.Mutex
	rnd  *rand.Rand
	rec  *recorder
	proc string
	ns   string // the run's namespace: events of other runs in the keyspace are not its
}

func (p *recordingPublisher) Publish(ctx context.Context, msgs []outbox.Message) error {
	p.mu.Lock()
	fail := p.rnd.IntN(8) == 0
	p.mu.Unlock()
	if fail {
		return errBrokerAway
	}
	for _, m := range msgs {
		if m.Namespace != p.ns {
			continue
		}
		p.rec.add(Entry{Type: "publish", Proc: p.proc, Op: "publish", Key: m.OpKey, Arg: m.ID, Value: string(m.Payload), Fence: m.Fence})
	}
	return ctx.Err()
}

// sharedOptions are the settings of the stagers and the relays alike.
func sharedOptions(ks string, clock func() time.Time) []outbox.Option {
	return []outbox.Option{outbox.WithKeyspace(ks), outbox.WithConsistency(gocql.Quorum), outbox.WithSerialConsistency(gocql.Serial),
		outbox.WithClock(clock)}
}

// stagerOptions are the stagers' settings: the shared ones.
func stagerOptions(ks string, clock func() time.Time) []outbox.StagerOption {
	var opts []outbox.StagerOption
	for _, o := range sharedOptions(ks, clock) {
		opts = append(opts, o)
	}
	return opts
}

// relayOptions are the relays' settings: the shared ones, and short backoffs, so an event whose
// publication failed is tried again within the run.
func relayOptions(ks string, clock func() time.Time) []outbox.RelayOption {
	var opts []outbox.RelayOption
	for _, o := range sharedOptions(ks, clock) {
		opts = append(opts, o)
	}
	return append(opts, outbox.WithPublishBackoff(100*time.Millisecond, time.Second), outbox.WithRelayLease(3*time.Second))
}

// startRelay runs a relay with a recording publisher until ctx ends; stop waits for it.
func startRelay(ctx context.Context, s *gocql.Session, ks, ns string, clock func() time.Time, rec *recorder, proc string, seed uint64) (stop func(), err error) {
	pub := &recordingPublisher{rnd: rand.New(rand.NewPCG(seed, 0x7075)), rec: rec, proc: proc, ns: ns}
	relay, err := outbox.NewRelay(s, pub, relayOptions(ks, clock)...)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = relay.Run(ctx, nil)
	}()
	return func() { <-done }, nil
}

// checkPublished: every committed run's event was published with the committed result, and no
// event of a run that did not commit was published.
func checkPublished(history []Entry, final map[string]finalState) []violation {
	published := map[string]map[string]bool{}
	for _, e := range history {
		if e.Type == "publish" {
			if published[e.Key] == nil {
				published[e.Key] = map[string]bool{}
			}
			published[e.Key][e.Value] = true
		}
	}
	var vs []violation
	for _, k := range sortedKeys(final) {
		f := final[k]
		if f.Status == "COMPLETED" && !published[k][f.Result] {
			vs = append(vs, violation{Check: "event-published", Key: k, Detail: fmt.Sprintf("the run that committed %q staged an event that was never published", f.Result)})
		}
		for v := range published[k] {
			if f.Status != "COMPLETED" || v != f.Result {
				vs = append(vs, violation{Check: "event-committed", Key: k, Detail: fmt.Sprintf("published the event of %q; the record is %s %q", v, f.Status, f.Result)})
			}
		}
	}
	return vs
}

// drainRelay runs a relay until every committed run of final has its event published, or for
// at most a minute, and returns the publications as history lines.
func drainRelay(s *gocql.Session, ks, ns, dir string, history []Entry, final map[string]finalState, seed uint64) ([]Entry, error) {
	path := dir + "/final-relay.jsonl"
	rec, err := newRecorder(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	stop, err := startRelay(ctx, s, ks, ns, time.Now, rec, "final-relay", seed)
	if err != nil {
		cancel()
		rec.close()
		return nil, err
	}
	// The relay's file is read every quarter of a second: the drain ends as soon as the last
	// committed event is published, not at the next multiple of a longer wait.
	for ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if h, err := readHistory(path); err == nil && len(checkPublishedOnly(append(h, history...), final)) == 0 {
			break
		}
	}
	cancel()
	stop()
	rec.close()
	return readHistory(path)
}

// checkPublishedOnly is the first half of checkPublished: the committed events not yet in h.
func checkPublishedOnly(h []Entry, final map[string]finalState) []violation {
	var vs []violation
	for _, v := range checkPublished(h, final) {
		if v.Check == "event-published" {
			vs = append(vs, v)
		}
	}
	return vs
}
