package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/parallel"
	"github.com/cassdedup/cassdedup/schema"
)

// The -hot-counter operations, as they appear in the phases' summaries.
const (
	ModeHotCounter = "hot-counter"
	opRecord       = "record"
	opTotal        = "total"
	// rollupInterval is how often the run's RunRollups folds closed windows.
	rollupInterval = 500 * time.Millisecond
	// projectedRate is the rate, all counters of a case together, the partition counts are
	// projected to.
	projectedRate = 10_000
)

// HotCounterCase is one case of -hot-counter: events recorded into Counters counters by
// Writers goroutines for DurationS while one goroutine reads totals, and what the tables held
// afterwards.
type HotCounterCase struct {
	Name     string `json:"name"`
	Counters int    `json:"counters"`
	Writers  int    `json:"writers"`
	// TargetRate is -hot-rate: the events per second the writers were paced to (0: unpaced).
	TargetRate float64 `json:"target_events_per_s"`
	DurationS  float64 `json:"duration_s"`
	// Acknowledged events (Record returned nil), per second of the run.
	Events     int64   `json:"events"`
	EventsPerS float64 `json:"events_per_s"`
	// Unconfirmed events failed every attempt: each may or may not be stored.
	Unconfirmed int64 `json:"unconfirmed"`
	// Totals read while writing: reads of the hot counter (a random one in the second case).
	TotalReads int64   `json:"total_reads"`
	TotalP50Ms float64 `json:"total_p50_ms"`
	TotalP99Ms float64 `json:"total_p99_ms"`
	// MaxPartitionRows is the most rows one partition of counter_window_events (one part of
	// one window of one counter) holds after the run, and MaxIndexRows the most of
	// counter_windows (one counter's day). The projections scale them to one hour at 10k
	// events/s per counter: the event partition by the rate (it lives one window), the index
	// partition by the time (it gains a row per window, whatever the rate).
	MaxPartitionRows               int64   `json:"max_partition_rows"`
	MaxPartitionRowsProjected1h10k float64 `json:"max_partition_rows_projected_1h_10k"`
	MaxIndexRows                   int64   `json:"max_index_rows"`
	MaxIndexRowsProjected1h        float64 `json:"max_index_rows_projected_1h"`
	PartitionsCounted              int     `json:"partitions_counted"`
	// RowsPerWrite is the events one write of the Log carried on average (a write holds the
	// rows queued for one partition), and WritesPerEvent the writes the Log sent per event
	// acknowledged: event row writes, window index rows, counter starts and late claims.
	RowsPerWrite   float64 `json:"rows_per_write"`
	WritesPerEvent float64 `json:"writes_per_event"`
	// IndexWritesPerEvent, StartsPerEvent and LateRoundsPerEvent are the parts of WritesPerEvent
	// that are not event rows: window index rows, counter starts (LWTs) and late claims (LWTs).
	IndexWritesPerEvent float64 `json:"index_writes_per_event"`
	StartsPerEvent      float64 `json:"starts_per_event"`
	LateRoundsPerEvent  float64 `json:"late_rounds_per_event"`
	// ProbeP50Ms and ProbeP99Ms are the latencies of one plain read of one row (a counter's
	// rollup row), sent one at a time every 10 ms beside the totals: what one round of a total
	// costs on the node under the same load, a total being three rounds (docs/eventlog.md).
	ProbeReads int64   `json:"probe_reads"`
	ProbeP50Ms float64 `json:"probe_p50_ms"`
	ProbeP99Ms float64 `json:"probe_p99_ms"`
	// PartsSummedPerTotal is the partitions the node summed for one total read (the total's own
	// sums), PartsSummedByRollupsPerTotal the rollups' sums over the same reads (the figure
	// parts_summed_per_total counted with them before), and PartsReusedPerTotal the sums the Log
	// reused from its cache, per total read (rollups' included: they share the Log).
	PartsSummedPerTotal          float64 `json:"parts_summed_per_total"`
	PartsSummedByRollupsPerTotal float64 `json:"parts_summed_by_rollups_per_total"`
	PartsReusedPerTotal          float64 `json:"parts_reused_per_total"`
	// Rollups is the Rollup calls of the case (its RunRollups'), and TotalFolds the folds its
	// totals made of closed windows they had summed.
	Rollups    int64 `json:"rollups"`
	TotalFolds int64 `json:"total_folds"`
	// WidthSwitches is the window widths the case's Logs (warm-up included) added for its
	// counters by their traffic, and WidthReadsPerEvent the reads of counters' widths its writers
	// made per event acknowledged; Widths the widths a counter can take (hot / window / cold).
	WidthSwitches      int64   `json:"width_switches"`
	WidthReadsPerEvent float64 `json:"width_reads_per_event"`
	Widths             string  `json:"widths"`
	// WarmupS is how long the same load ran, on other counters, before the first case, and was
	// not measured.
	WarmupS float64 `json:"warmup_s"`
	// WarmupFoldS is how long folding the warm-up's closed windows took, between the warm-up and
	// the measured run, unmeasured: a counter's first windows, before its traffic gave them their
	// width (about 95 s), are 1 s wide, and a long-lived counter has none left to fold.
	WarmupFoldS                    float64 `json:"warmup_fold_s"`
	TotalExact                     bool    `json:"total_exact"`
	CountersChecked                int     `json:"counters_checked"`
	CountersWrong                  int     `json:"counters_wrong"`
	WindowS, GraceS, SettleS, LagS float64 `json:"-"`
	Parts                          int     `json:"parts"`
	Window                         string  `json:"window"`
	Grace                          string  `json:"grace"`
	Settle                         string  `json:"settle"`
	RollupEvery                    string  `json:"rollup_every"`
	Lag                            string  `json:"lag"`
	ProjectionNote                 string  `json:"projection_note"`
	FirstError                     string  `json:"first_error,omitempty"`
}

// hotCounter runs the two cases: one hot counter, then c.Counters counters at once.
func hotCounter(ctx context.Context, c Config, session *gocql.Session, keyspace string, stderr io.Writer) ([]PhaseResult, []HotCounterCase, error) {
	var phases []PhaseResult
	var cases []HotCounterCase
	for i, n := range []int{1, c.Counters} {
		name := "one hot counter"
		if i > 0 {
			name = fmt.Sprintf("%d counters at once", n)
		}
		// Each case counts on counters of its own: with -counters 1 the second case would
		// otherwise add to the first case's counter and find its total off.
		p, hc, err := hotCounterCase(ctx, c, session, keyspace, name, fmt.Sprintf("hot%d-", i+1), n, stderr)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		hc.WarmupS = c.Warmup.Seconds()
		phases, cases = append(phases, p), append(cases, hc)
	}
	return phases, cases, nil
}

// hotRun is the state of one case while it runs.
type hotRun struct {
	log      *events.Log
	counters []string
	ids      string         // prefixes the run's event ids: the warm-up's are other events
	acked    []atomic.Int64 // per counter
	unconf   atomic.Int64
	writes   []*opStats // per writer
	reads    *opStats
	probes   *opStats
	firstErr atomic.Pointer[string]
	elapsed  time.Duration // how long the writers ran
	foldTook time.Duration // how long foldAll took
}

// foldAll folds every counter's closed windows, 16 counters at a time, and returns how long
// it took.
func (h *hotRun) foldAll(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	err := parallel.ForEach(ctx, len(h.counters), 16, func(ctx context.Context, i int) error {
		_, err := h.log.Rollup(ctx, h.counters[i])
		return err
	})
	return time.Since(start), err
}

func (h *hotRun) fail(err error) {
	s := err.Error()
	h.firstErr.CompareAndSwap(nil, &s)
}

// hotCounterCase runs the same load on the case's counters for c.Warmup, unmeasured (the node's
// and the client's hot paths compile, and the counters' windows take the widths their traffic
// calls for, as a long-lived counter's have), then for c.Duration, measured; the totals checked
// count both runs' events.
func hotCounterCase(ctx context.Context, c Config, session *gocql.Session, keyspace, name, prefix string, n int, stderr io.Writer) (PhaseResult, HotCounterCase, error) {
	var warm *hotRun
	if c.Warmup > 0 {
		fmt.Fprintf(stderr, "lwtbench: %s, warm-up for %s ...\n", name, c.Warmup)
		var err error
		if warm, err = runHot(ctx, c, session, keyspace, prefix, "warm-", n, c.Warmup); err != nil {
			return PhaseResult{}, HotCounterCase{}, fmt.Errorf("warm-up: %w", err)
		}
		if warm.foldTook, err = warm.foldAll(ctx); err != nil {
			return PhaseResult{}, HotCounterCase{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	fmt.Fprintf(stderr, "lwtbench: %s for %s ...\n", name, c.Duration)
	h, err := runHot(ctx, c, session, keyspace, prefix, "", n, c.Duration)
	if err != nil {
		return PhaseResult{}, HotCounterCase{}, err
	}
	elapsed := h.elapsed
	hc := h.result(name, c, elapsed)
	if warm != nil {
		for i := range h.acked {
			h.acked[i].Add(warm.acked[i].Load())
		}
		hc.Unconfirmed += warm.unconf.Load()
		hc.WidthSwitches += warm.log.Stats().WidthSwitches
		hc.WarmupFoldS = warm.foldTook.Seconds()
	}
	if err := h.check(ctx, &hc); err != nil {
		return PhaseResult{}, HotCounterCase{}, err
	}
	if err := h.countPartitions(ctx, session, keyspace, &hc); err != nil {
		return PhaseResult{}, HotCounterCase{}, err
	}
	return h.phase(name, c, elapsed), hc, nil
}

// runHot drives n counters named prefix0, prefix1, ... for d: c.Writers goroutines recording
// events, one reading totals and RunRollups folding, all on one Log.
func runHot(ctx context.Context, c Config, session *gocql.Session, keyspace, prefix, ids string, n int, d time.Duration) (*hotRun, error) {
	log, err := events.NewLog(session, events.WithKeyspace(keyspace), events.WithConsistency(c.Consistency),
		events.WithSerialConsistency(c.Serial))
	if err != nil {
		return nil, err
	}
	h := &hotRun{log: log, counters: make([]string, n), ids: ids, acked: make([]atomic.Int64, n), reads: newOpStats(),
		probes: newOpStats()}
	for i := range n {
		h.counters[i] = fmt.Sprint(prefix, i)
	}
	for range c.Writers {
		h.writes = append(h.writes, newOpStats())
	}
	runCtx, stop := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { _ = log.RunRollups(runCtx, rollupInterval, func(_ string, err error) { h.fail(err) }) })
	bg.Go(func() { h.read(runCtx) })
	bg.Go(func() { h.probe(runCtx, session, keyspace) })
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for w := range c.Writers {
		var pace *openSchedule
		if c.HotRate > 0 {
			s := newOpenSchedule(start, c.HotRate, d, c.Writers, w)
			pace = &s
		}
		wg.Go(func() { h.write(runCtx, w, end, pace) })
	}
	wg.Wait()
	h.elapsed = time.Since(start)
	stop()
	bg.Wait()
	return h, ctx.Err()
}

// write records events into the counters round-robin until end, each retried on failure as a
// caller would: the same id and time. With pace, event i waits for its turn in the schedule
// (a writer behind it does not wait), so the writers together keep -hot-rate.
func (h *hotRun) write(ctx context.Context, w int, end time.Time, pace *openSchedule) {
	stats := h.writes[w]
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for i := 0; ctx.Err() == nil && time.Now().Before(end); i++ {
		if pace != nil && (i >= pace.count || !pace.await(ctx, i, timer)) {
			return
		}
		k := (w + i*len(h.writes)) % len(h.counters)
		e := events.Event{Counter: h.counters[k], ID: fmt.Sprintf("%sw%d-%d", h.ids, w, i), Delta: 1, Time: time.Now()}
		var err error
		for range 3 {
			t := time.Now()
			err = h.log.Record(ctx, e)
			stats.record(time.Since(t), err)
			if err == nil || errors.Is(err, events.ErrBucketClosed) {
				break
			}
		}
		switch {
		case err == nil:
			h.acked[k].Add(1)
		case ctx.Err() == nil:
			h.unconf.Add(1)
			h.fail(err)
		}
	}
}

// read reads totals until ctx ends: the hot counter, or a random one of many.
func (h *hotRun) read(ctx context.Context) {
	for ctx.Err() == nil {
		counter := h.counters[rand.IntN(len(h.counters))]
		t := time.Now()
		_, err := h.log.Total(ctx, counter)
		if ctx.Err() != nil {
			return
		}
		h.reads.record(time.Since(t), err)
		if err != nil {
			h.fail(err)
		}
	}
}

// probe reads one row of counter_rollups every 10 ms until ctx ends, one read at a time.
func (h *hotRun) probe(ctx context.Context, session *gocql.Session, keyspace string) {
	rollups, err := schema.QualifiedName(keyspace, "counter_rollups")
	if err != nil {
		h.fail(err)
		return
	}
	q := `SELECT watermark FROM ` + rollups + ` WHERE counter = ?`
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := time.Now()
		err := session.Query(q, h.counters[rand.IntN(len(h.counters))]).WithContext(ctx).Exec()
		if ctx.Err() != nil {
			return
		}
		h.probes.record(time.Since(t), err)
	}
}

func (h *hotRun) result(name string, c Config, elapsed time.Duration) HotCounterCase {
	var acked int64
	for i := range h.acked {
		acked += h.acked[i].Load()
	}
	reads := summarize(opTotal, h.reads, elapsed)
	probes := summarize("probe", h.probes, elapsed)
	hc := HotCounterCase{
		Name: name, Counters: len(h.counters), Writers: c.Writers, TargetRate: c.HotRate, DurationS: elapsed.Seconds(),
		Events: acked, EventsPerS: float64(acked) / elapsed.Seconds(), Unconfirmed: h.unconf.Load(),
		TotalReads: reads.Requests, TotalP50Ms: reads.P50Ms, TotalP99Ms: reads.P99Ms,
		ProbeReads: probes.Requests, ProbeP50Ms: probes.P50Ms, ProbeP99Ms: probes.P99Ms,
		Parts: events.DefaultParts, Window: events.DefaultWindow.String(),
		Widths: fmt.Sprintf("%v / %v / %v", events.DefaultHotWidth, events.DefaultWindow, events.DefaultColdWidth), Grace: events.DefaultGracePeriod.String(),
		Settle: events.DefaultSettleTime.String(), RollupEvery: rollupInterval.String(), Lag: h.log.Lag(rollupInterval).String(),
	}
	if p := h.firstErr.Load(); p != nil {
		hc.FirstError = *p
	}
	h.costs(&hc, h.log.Stats())
	return hc
}

// costs sets what the case's writes and totals cost, from its Log's counters taken when the
// writers stopped: per write, per event acknowledged and per total read.
func (h *hotRun) costs(hc *HotCounterCase, st events.LogStats) {
	if st.Writes > 0 {
		hc.RowsPerWrite = float64(st.Rows) / float64(st.Writes)
	}
	if hc.Events > 0 {
		n := float64(hc.Events)
		hc.WritesPerEvent = float64(st.Writes+st.IndexWrites+st.Starts+st.LateRounds) / n
		hc.IndexWritesPerEvent, hc.StartsPerEvent = float64(st.IndexWrites)/n, float64(st.Starts)/n
		hc.LateRoundsPerEvent = float64(st.LateRounds) / n
	}
	if st.TotalReads > 0 { // one reader: a read per total
		hc.PartsSummedPerTotal = float64(st.TotalSummed) / float64(st.TotalReads)
		hc.PartsSummedByRollupsPerTotal = float64(st.Summed-st.TotalSummed) / float64(st.TotalReads)
		hc.PartsReusedPerTotal = float64(st.Reused) / float64(st.TotalReads)
	}
	hc.Rollups, hc.TotalFolds = st.Rollups, st.TotalFolds
	hc.WidthSwitches, hc.WidthReadsPerEvent = st.WidthSwitches, 0
	if hc.Events > 0 {
		hc.WidthReadsPerEvent = float64(st.WidthReads) / float64(hc.Events)
	}
}

// check folds each counter's closed windows and compares its total with the events
// acknowledged. It does not wait for every window of the run to close (up to the cold width,
// 5 minutes): a total is exact at any time, folded or not, and the run's rollups and totals have
// folded the windows that closed while it ran.
func (h *hotRun) check(ctx context.Context, hc *HotCounterCase) error {
	var wrong atomic.Int64
	err := parallel.ForEach(ctx, len(h.counters), 16, func(ctx context.Context, i int) error {
		if _, err := h.log.Rollup(ctx, h.counters[i]); err != nil {
			return err
		}
		total, err := h.log.Total(ctx, h.counters[i])
		if err != nil {
			return err
		}
		if total != h.acked[i].Load() {
			wrong.Add(1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check totals: %w", err)
	}
	hc.CountersChecked, hc.CountersWrong = len(h.counters), int(wrong.Load())
	hc.TotalExact = wrong.Load() == 0 && hc.Unconfirmed == 0
	return nil
}

// countedCounters bounds how many counters of a case have their partitions counted.
const countedCounters = 50

// countPartitions counts the rows of every part of every window of (up to 50 of) the case's
// counters, and of their index partitions, and projects the largest to an hour at 10k/s.
func (h *hotRun) countPartitions(ctx context.Context, session *gocql.Session, keyspace string, hc *HotCounterCase) error {
	windows, err := schema.QualifiedName(keyspace, "counter_windows")
	if err != nil {
		return err
	}
	rows, err := schema.QualifiedName(keyspace, "counter_window_events")
	if err != nil {
		return err
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	for _, counter := range h.counters[:min(len(h.counters), countedCounters)] {
		for _, d := range []time.Time{day.Add(-24 * time.Hour), day} {
			iter := session.Query(`SELECT bucket, parts FROM `+windows+` WHERE counter = ? AND day = ?`, counter, d).
				WithContext(ctx).Iter()
			var window time.Time
			var parts, indexRows int
			for iter.Scan(&window, &parts) {
				indexRows++
				for p := range parts {
					var n int64
					if err := session.Query(`SELECT count(*) FROM `+rows+` WHERE counter = ? AND bucket = ? AND part = ?`,
						counter, window, p).WithContext(ctx).Scan(&n); err != nil {
						_ = iter.Close()
						return fmt.Errorf("count %s %v part %d: %w", counter, window, p, err)
					}
					hc.MaxPartitionRows = max(hc.MaxPartitionRows, n)
					hc.PartitionsCounted++
				}
			}
			if err := iter.Close(); err != nil {
				return fmt.Errorf("list windows of %s: %w", counter, err)
			}
			hc.MaxIndexRows = max(hc.MaxIndexRows, int64(indexRows))
		}
	}
	if hc.EventsPerS > 0 {
		hc.MaxPartitionRowsProjected1h10k = float64(hc.MaxPartitionRows) * projectedRate / hc.EventsPerS
	}
	hc.MaxIndexRowsProjected1h = float64(hc.MaxIndexRows) * float64(time.Hour) / (hc.DurationS * float64(time.Second))
	hc.ProjectionNote = "an event partition holds one part of one window, so its rows scale with the rate (x 10,000 / events per s); an index partition holds one counter's day and gains at most one row per window whatever the rate (x 3,600 s / run)"
	return nil
}

// phase returns the case's latencies as a phase, for the table and the chart.
func (h *hotRun) phase(name string, c Config, elapsed time.Duration) PhaseResult {
	writes := newOpStats()
	for _, s := range h.writes {
		writes.merge(s)
	}
	sums := []Summary{summarize(opRecord, writes, elapsed), summarize(opTotal, h.reads, elapsed)}
	setRatios(sums, opRecord)
	return PhaseResult{
		Name: fmt.Sprintf("%s, %d writers and one reader", name, c.Writers), Mode: ModeHotCounter, Workers: c.Writers + 1,
		DurationS: c.Duration.Seconds(), ElapsedS: elapsed.Seconds(), Throughput: sums[0].Throughput,
		Operations: sums, LatencyFrom: "send",
	}
}
