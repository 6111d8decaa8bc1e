package promobs

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/outbox"
)

// RelayCollector exports what an outbox.Relay's passes report (outbox.Stats), labelled
// relay=name. Hand its OnPass to Relay.Run; every scrape reads the last pass and the totals:
//
//	cassdedup_outbox_pending_intents{relay}            gauge: intents the last pass left pending
//	                                                   (Stats.Waiting)
//	cassdedup_outbox_oldest_pending_seconds{relay}     gauge: the age of the oldest pending intent
//	                                                   the last pass read (Stats.Oldest)
//	cassdedup_outbox_leases_held{relay}                gauge: shards the relay holds (Stats.Shards)
//	cassdedup_outbox_held_intents{relay}               gauge: committed intents the last pass held
//	                                                   back behind an unsettled earlier one of
//	                                                   their key (Stats.Held, outbox.WithKeyOrder)
//	cassdedup_outbox_publish_lag_seconds{relay}        gauge: time since the last pass that ended
//	                                                   without error; it grows while the relay
//	                                                   fails or does not run at all, when no pass
//	                                                   reports anything
//	cassdedup_outbox_last_pass_timestamp_seconds{relay} gauge: when the last pass ended (Unix)
//	cassdedup_outbox_published_total{relay}            counter: messages published
//	cassdedup_outbox_dropped_total{relay}              counter: intents whose run did not commit
//	cassdedup_outbox_failed_passes_total{relay}        counter: passes that ended in an error
//	cassdedup_outbox_attempts_total{relay}             counter: rejections counted toward
//	                                                   parking their events (Stats.Attempts)
//	cassdedup_outbox_transient_failures_total{relay}   counter: failed publications that count
//	                                                   nothing toward parking: timeouts, the
//	                                                   broker away (Stats.Transient)
//	cassdedup_outbox_parked_total{relay}               counter: operations whose events were parked
//	cassdedup_outbox_expired_total{relay}              counter: of them, parked because their
//	                                                   record expired first (Stats.Expired)
//	cassdedup_outbox_slow_publishes_total{relay}       counter: Publish calls slower than
//	                                                   outbox.WithSlowPublish
//	cassdedup_outbox_fenced_total{relay}               counter: shards lost: to a newer relay, or
//	                                                   a lease that ran out (Stats.Fenced)
//	cassdedup_outbox_leases_lost_total{relay}          counter: of them, lost because this relay's
//	                                                   lease ran out or was lost (Stats.LeasesLost)
//
// docs/operating.md lists the alerts to set on them. It is safe for concurrent use; register it
// once per Relay, beside the Metrics.
type RelayCollector struct {
	now func() time.Time
	mu  sync.Mutex
	// last is the last pass's Stats; totals adds up the counters of every pass.
	last, totals     outbox.Stats
	lastPass, lastOK time.Time
	failed           int64
	started          time.Time

	pending, oldest, leases, lag, passAt, held            *prometheus.Desc
	published, dropped, failedPasses, attempts, parked    *prometheus.Desc
	expired, slowPublishes, fenced, leasesLost, transient *prometheus.Desc
}

// NewRelayCollector returns the collector of one relay, whose series carry relay=name and the
// constant labels given (WithConstLabels; other options are refused: they shape the
// histograms of New).
func NewRelayCollector(name string, opts ...Option) (*RelayCollector, error) {
	return newRelayCollector(name, time.Now, opts)
}

func newRelayCollector(name string, now func() time.Time, opts []Option) (*RelayCollector, error) {
	desc, err := collectorDesc("RelayCollector", "relay", name, opts)
	if err != nil {
		return nil, err
	}
	return &RelayCollector{now: now, started: now(),
		pending: desc("cassdedup_outbox_pending_intents", "Outbox intents the relay's last pass left pending."),
		oldest: desc("cassdedup_outbox_oldest_pending_seconds",
			"The age of the oldest pending outbox intent the relay's last pass read."),
		leases: desc("cassdedup_outbox_leases_held", "Shards the relay holds under its lease."),
		held: desc("cassdedup_outbox_held_intents",
			"Committed outbox intents the relay's last pass held back behind an unsettled earlier one of their key (WithKeyOrder)."),
		lag: desc("cassdedup_outbox_publish_lag_seconds",
			"Time since the relay's last pass that ended without error (since the collector's start before the first)."),
		passAt:       desc("cassdedup_outbox_last_pass_timestamp_seconds", "When the relay's last pass ended, in Unix seconds."),
		published:    desc("cassdedup_outbox_published_total", "Messages the relay published."),
		dropped:      desc("cassdedup_outbox_dropped_total", "Intents the relay dropped because their run did not commit."),
		failedPasses: desc("cassdedup_outbox_failed_passes_total", "Relay passes that ended in an error."),
		attempts: desc("cassdedup_outbox_attempts_total",
			"Rejections of events counted toward parking them (each backs off before the next)."),
		transient: desc("cassdedup_outbox_transient_failures_total",
			"Failed publications that count nothing toward parking: timeouts, an unreachable broker (they back off)."),
		parked:        desc("cassdedup_outbox_parked_total", "Operations whose events the relay parked for an operator."),
		expired:       desc("cassdedup_outbox_expired_total", "Operations parked because their record expired before a relay settled them."),
		slowPublishes: desc("cassdedup_outbox_slow_publishes_total", "Publish calls slower than the relay's WithSlowPublish."),
		fenced:        desc("cassdedup_outbox_fenced_total", "Shards the relay lost: to a newer relay, or a lease that ran out."),
		leasesLost: desc("cassdedup_outbox_leases_lost_total",
			"Shards the relay lost because its own lease ran out or was lost."),
	}, nil
}

// OnPass records one pass; pass it to outbox.Relay.Run (or call it after each Relay.Poll).
func (c *RelayCollector) OnPass(st outbox.Stats, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastPass = c.now()
	if err != nil {
		c.failed++
	} else {
		c.lastOK = c.lastPass
	}
	c.last = st
	c.totals.Add(st)
}

// Describe sends the descriptors.
func (c *RelayCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.oldest, c.leases, c.held, c.lag, c.passAt, c.published, c.dropped, c.failedPasses,
		c.attempts, c.transient, c.parked, c.expired, c.slowPublishes, c.fenced, c.leasesLost} {
		ch <- d
	}
}

// Collect sends the last pass's gauges and the totals.
func (c *RelayCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := c.lastOK
	if ok.IsZero() {
		ok = c.started
	}
	var passAt float64
	if !c.lastPass.IsZero() {
		passAt = float64(c.lastPass.UnixNano()) / 1e9
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	count := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.pending, float64(c.last.Waiting))
	gauge(c.oldest, c.last.Oldest.Seconds())
	gauge(c.leases, float64(c.last.Shards))
	gauge(c.held, float64(c.last.Held))
	gauge(c.lag, max(c.now().Sub(ok), 0).Seconds())
	gauge(c.passAt, passAt)
	count(c.published, float64(c.totals.Published))
	count(c.dropped, float64(c.totals.Dropped))
	count(c.failedPasses, float64(c.failed))
	count(c.attempts, float64(c.totals.Attempts))
	count(c.transient, float64(c.totals.Transient))
	count(c.parked, float64(c.totals.Parked))
	count(c.expired, float64(c.totals.Expired))
	count(c.slowPublishes, float64(c.totals.SlowPublishes))
	count(c.fenced, float64(c.totals.Fenced))
	count(c.leasesLost, float64(c.totals.LeasesLost))
}
