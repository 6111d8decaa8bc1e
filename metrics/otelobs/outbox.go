package otelobs

import (
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cassdedup/cassdedup/outbox"
)

// Relay reports what an outbox.Relay's passes report (outbox.Stats), with the attribute
// relay=name, read at every collection. Hand its OnPass to Relay.Run:
//
//	cassdedup.outbox.pending        {relay}  gauge: intents the last pass left pending
//	                                         (Stats.Waiting)
//	cassdedup.outbox.oldest_pending {relay}  gauge, s: the age of the oldest pending intent the
//	                                         last pass read (Stats.Oldest)
//	cassdedup.outbox.leases         {relay}  gauge: shards the relay holds (Stats.Shards)
//	cassdedup.outbox.held           {relay}  gauge: committed intents the last pass held back
//	                                         behind an unsettled earlier one of their key
//	                                         (Stats.Held, outbox.WithKeyOrder)
//	cassdedup.outbox.publish.lag    {relay}  gauge, s: time since the last pass that ended
//	                                         without error; it grows while the relay fails or
//	                                         does not run at all, when no pass reports anything
//	cassdedup.outbox.published      {relay}  counter: messages published
//	cassdedup.outbox.dropped        {relay}  counter: intents whose run did not commit
//	cassdedup.outbox.failed_passes  {relay}  counter: passes that ended in an error
//	cassdedup.outbox.attempts       {relay}  counter: rejections counted toward parking their
//	                                         events (Stats.Attempts)
//	cassdedup.outbox.transient_failures {relay} counter: failed publications that count nothing
//	                                         toward parking: timeouts, the broker away
//	                                         (Stats.Transient)
//	cassdedup.outbox.parked         {relay}  counter: operations whose events were parked
//	cassdedup.outbox.expired        {relay}  counter: of them, parked because their record
//	                                         expired first (Stats.Expired)
//	cassdedup.outbox.slow_publishes {relay}  counter: Publish calls slower than WithSlowPublish
//	cassdedup.outbox.fenced         {relay}  counter: shards lost: to a newer relay, or a lease
//	                                         that ran out (Stats.Fenced)
//	cassdedup.outbox.leases_lost    {relay}  counter: of them, lost because this relay's lease
//	                                         ran out or was lost (Stats.LeasesLost)
//
// docs/operating.md lists the alerts to set on them. It is safe for concurrent use. Call
// Unregister when the relay is no longer used.
type Relay struct {
	reg     metric.Registration
	now     func() time.Time
	mu      sync.Mutex
	last    outbox.Stats
	totals  outbox.Stats
	lastOK  time.Time
	failed  int64
	started time.Time
}

// ObserveRelay returns the metrics of one relay (the option WithMeterProvider; the others are
// ignored).
func ObserveRelay(name string, opts ...Option) (*Relay, error) {
	return observeRelay(name, time.Now, opts)
}

func observeRelay(name string, now func() time.Time, opts []Option) (*Relay, error) {
	r := &Relay{now: now, started: now()}
	var err error
	r.reg, err = observe(opts, attribute.String("relay", name), [][3]string{
		{"cassdedup.outbox.pending", "{intent}", "Outbox intents the relay's last pass left pending."},
		{"cassdedup.outbox.leases", "{shard}", "Shards the relay holds under its lease."},
		{"cassdedup.outbox.publish.lag", "s", "Time since the relay's last pass that ended without error."},
		{"cassdedup.outbox.oldest_pending", "s", "The age of the oldest pending outbox intent the relay's last pass read."},
		{"cassdedup.outbox.held", "{intent}", "Committed outbox intents the relay's last pass held back behind an unsettled earlier one of their key (WithKeyOrder)."},
	}, [][3]string{
		{"cassdedup.outbox.published", "{message}", "Messages the relay published."},
		{"cassdedup.outbox.dropped", "{intent}", "Intents the relay dropped because their run did not commit."},
		{"cassdedup.outbox.failed_passes", "{pass}", "Relay passes that ended in an error."},
		{"cassdedup.outbox.fenced", "{shard}", "Shards the relay lost: to a newer relay, or a lease that ran out."},
		{"cassdedup.outbox.attempts", "{attempt}", "Rejections of events counted toward parking them."},
		{"cassdedup.outbox.parked", "{operation}", "Operations whose events the relay parked for an operator."},
		{"cassdedup.outbox.expired", "{operation}", "Operations parked because their record expired before a relay settled them."},
		{"cassdedup.outbox.slow_publishes", "{call}", "Publish calls slower than the relay's WithSlowPublish."},
		{"cassdedup.outbox.leases_lost", "{shard}", "Shards the relay lost because its own lease ran out or was lost."},
		{"cassdedup.outbox.transient_failures", "{publication}", "Failed publications that count nothing toward parking: timeouts, an unreachable broker."},
	}, r.values)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// values are the relay's gauges and counters, in the order observeRelay defines them.
func (r *Relay) values() ([]float64, []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.lastOK
	if ok.IsZero() {
		ok = r.started
	}
	t := r.totals
	return []float64{float64(r.last.Waiting), float64(r.last.Shards), max(r.now().Sub(ok), 0).Seconds(), r.last.Oldest.Seconds(),
			float64(r.last.Held)},
		[]int64{int64(t.Published), int64(t.Dropped), r.failed, int64(t.Fenced), int64(t.Attempts),
			int64(t.Parked), int64(t.Expired), int64(t.SlowPublishes), int64(t.LeasesLost), int64(t.Transient)}
}

// OnPass records one pass; pass it to outbox.Relay.Run (or call it after each Relay.Poll).
func (r *Relay) OnPass(st outbox.Stats, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
	} else {
		r.lastOK = r.now()
	}
	r.last = st
	r.totals.Add(st)
}

// Unregister stops reporting the relay's metrics.
func (r *Relay) Unregister() error { return r.reg.Unregister() }
