package events

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/internal/flights"
)

// Windows sized by traffic. A counter's windows have the width its entries in the rollup row
// (counter_rollups.widths, schema/cql/021) give the event's time: a cold counter's windows
// widen, so it does not pay a partition and an index row per event, and a hot counter's
// narrow, so a total sums a bounded slice of its filling window. An entry is only ever added,
// and only with a since that every writer reads before an event time reaches it (see
// widthSwitchAhead), so the window of any event time never changes once a writer can use it.
const (
	// DefaultHotWidth and DefaultColdWidth are the widths a counter's windows take when its
	// traffic calls for it (WithWindowWidths): a counter this Log writes at HotRate events per
	// second or more gets windows of the hot width, one it writes at less than ColdRate the cold
	// width, any other the window width (WithBucketWidth).
	DefaultHotWidth  = 250 * time.Millisecond
	DefaultColdWidth = 5 * time.Minute
	// HotRate and ColdRate are the rates, measured by each Log over ratePeriod on the events it
	// writes, at which a counter's windows narrow to the hot width or widen to the cold one. A
	// counter leaves a width only past twice (hot: half) the rate that brought it there.
	HotRate  = 2000
	ColdRate = 10
)

const (
	// widthRefresh is how long a writer uses the entries it read before it reads them again,
	// beyond the clock skew an event time may have.
	widthRefresh = 20 * time.Second
	// widthCommitBound bounds a new entry's conditional write: it commits within this of being
	// sent or not at all (its context ends then, and an unknown outcome is settled by a serial
	// read, which completes or supersedes the proposal).
	widthCommitBound = 5 * time.Second
	// ratePeriod is how long a Log counts a counter's events before it judges their rate.
	ratePeriod = 5 * time.Second
	// widthsCacheSize bounds the counters whose entries a Log keeps; past it, those unused for
	// widthsIdle are dropped (a writer or total reads them again before using them).
	widthsCacheSize = 1 << 17
	widthsIdle      = 10 * time.Minute
)

// widthEntry is one entry of a counter's widths: windows of width from since on.
type widthEntry struct {
	since time.Time
	width time.Duration
}

// widths are a counter's entries as read, by since ascending, and until when they can be used
// for event times (no entry with an earlier since can be added any more).
type widths struct {
	entries []widthEntry
	until   time.Time
	used    time.Time // when a writer or reader last asked for them (for the cache's bound)
}

// span returns the window holding t: its time truncated to the width in effect at t (base
// before the first entry), cut at the entries' sinces, so a window never holds two widths.
// Every width divides 24 h, so a window never spans two days either.
func (ws *widths) span(t time.Time, base time.Duration) (start, end time.Time) {
	t = t.UTC()
	i, _ := slices.BinarySearchFunc(ws.entries, t, func(e widthEntry, t time.Time) int {
		if e.since.After(t) {
			return 1
		}
		return -1
	})
	w, since := base, time.Time{}
	if i > 0 {
		w, since = ws.entries[i-1].width, ws.entries[i-1].since
	}
	start = t.Truncate(w)
	end = start.Add(w)
	if start.Before(since) {
		start = since
	}
	if i < len(ws.entries) && ws.entries[i].since.Before(end) {
		end = ws.entries[i].since
	}
	return start, end
}

// last returns the width in effect after every entry (base when there is none) and the last
// entry's since.
func (ws *widths) last(base time.Duration) (time.Duration, time.Time) {
	if len(ws.entries) == 0 {
		return base, time.Time{}
	}
	e := ws.entries[len(ws.entries)-1]
	return e.width, e.since
}

// widthsOf turns a stored widths map (since -> milliseconds) into entries.
func widthsOf(stored map[time.Time]int) []widthEntry {
	out := make([]widthEntry, 0, len(stored))
	for since, ms := range stored {
		if ms > 0 {
			out = append(out, widthEntry{since: since.UTC(), width: time.Duration(ms) * time.Millisecond})
		}
	}
	slices.SortFunc(out, func(a, b widthEntry) int { return a.since.Compare(b.since) })
	return out
}

// widthState is a Log's view of its counters' widths and of the rates it writes them at.
type widthState struct {
	mu         sync.Mutex
	cache      map[string]*widths
	pruned     time.Time
	rates      map[string]*rateCount
	wants      map[string]time.Duration // counters whose traffic calls for another width
	refreshing flights.Set[string, struct{}]
	proposing  flights.Set[string, struct{}]
}

// rateCount counts the events a Log wrote to a counter in one ratePeriod; full says it wrote
// to the counter in the period before too, so it counted this one from its start.
type rateCount struct {
	period time.Time
	n      int
	full   bool
}

func newWidthState() *widthState {
	return &widthState{cache: map[string]*widths{}, rates: map[string]*rateCount{}, wants: map[string]time.Duration{}}
}

// widthSwitchAhead is how far ahead of the clock a new entry's since is: past the clock skew
// an event time may have and the refresh period, plus the write's bound and a second for the
// clocks of the writers apart. A writer that read the entries at v uses them for event times
// before v + skew + widthRefresh (see learnWidths); an entry it did not see was sent after
// about v - widthCommitBound, so its since is later than that.
func (l *Log) widthSwitchAhead() time.Duration {
	return l.cfg.skew + widthRefresh + widthCommitBound + time.Second
}

// span returns the window of counter holding t, from the widths this Log read last (see
// ensureWidths for writers; totals and rollups learn them from the rollup row they read).
func (l *Log) span(counter string, t time.Time) (start, end time.Time) {
	ws := l.widthsNow(counter)
	return ws.span(t, l.cfg.width)
}

// windowOf returns the start of counter's window holding t.
func (l *Log) windowOf(counter string, t time.Time) time.Time {
	start, _ := l.span(counter, t)
	return start
}

// endOf returns the end of counter's window that starts at w.
func (l *Log) endOf(counter string, w time.Time) time.Time {
	_, end := l.span(counter, w)
	return end
}

// writerEnd returns the end of counter's window starting at w as far as a writer can vouch:
// an entry added since the widths were read has a since past their until, and can only cut the
// window shorter, so a window taken for open until this end is open. Writers judge whether a
// window still takes on-time writes by it (closed, landBy): with stale widths, a window closes
// early for them and the late path, which reads the widths again, takes the event.
func (l *Log) writerEnd(counter string, w time.Time) time.Time {
	ws := l.widthsNow(counter)
	_, end := ws.span(w, l.cfg.width)
	if ws.until.Before(end) {
		return ws.until
	}
	return end
}

// widthsNow returns the cached widths of counter (none: every window of the base width).
func (l *Log) widthsNow(counter string) *widths {
	s := l.widths
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.cache[counter]
	if !ok {
		return &widths{}
	}
	ws.used = l.cfg.Now()
	return ws
}

// vouches reports whether the cached widths of counter hold for event time t.
func (l *Log) vouches(counter string, t time.Time) bool {
	s := l.widths
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.cache[counter]
	return ok && t.Before(ws.until)
}

// learnWidths caches the entries of counter's rollup row, read with a request sent at read:
// an entry not in it was written after read less widthCommitBound, with a since at least
// widthSwitchAhead after that, so they hold for event times before read + skew + widthRefresh.
// started says the counter has started (its row has a since): before that, a writer could
// still store other first entries. Entries only grow, so the cache keeps the union.
func (l *Log) learnWidths(counter string, stored map[time.Time]int, read time.Time, started bool) {
	if !started {
		return
	}
	fresh := &widths{entries: widthsOf(stored), until: read.Add(l.cfg.skew + widthRefresh), used: l.cfg.Now()}
	s := l.widths
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.cache[counter]; ok {
		for _, e := range old.entries {
			if !slices.ContainsFunc(fresh.entries, func(f widthEntry) bool { return f.since.Equal(e.since) }) {
				fresh.entries = append(fresh.entries, e)
			}
		}
		slices.SortFunc(fresh.entries, func(a, b widthEntry) int { return a.since.Compare(b.since) })
		if old.until.After(fresh.until) {
			fresh.until = old.until
		}
	} else if read.IsZero() {
		return // one new entry, without the others: read them all before using any
	}
	s.cache[counter] = fresh
	l.pruneWidths()
}

// pruneWidths drops, past widthsCacheSize counters, those unused for widthsIdle: no call of the
// Log can still be using them. s.mu is held.
func (l *Log) pruneWidths() {
	s := l.widths
	now := l.cfg.Now()
	if len(s.cache) < widthsCacheSize || now.Sub(s.pruned) < time.Minute {
		return
	}
	s.pruned = now
	for c, ws := range s.cache {
		if now.Sub(ws.used) > widthsIdle {
			delete(s.cache, c)
		}
	}
}

// ensureWidths reads counter's widths unless those cached hold for event time t. A writer
// calls it after the counter started and before it computes a window.
func (l *Log) ensureWidths(ctx context.Context, counter string, t time.Time) error {
	return once(ctx, &l.widths.refreshing, counter, func() bool { return l.vouches(counter, t) }, func() error {
		if _, err := l.readWidths(ctx, counter); err != nil {
			return err
		}
		if !l.vouches(counter, t) {
			return fmt.Errorf("events: window widths of %q: the counter has not started", counter)
		}
		return nil
	})
}

// readWidths reads counter's widths and since (a plain read of its rollup row), caches the
// widths, and reports whether the counter has started.
func (l *Log) readWidths(ctx context.Context, counter string) (started bool, err error) {
	read := l.cfg.Now()
	var stored map[time.Time]int
	var since *time.Time
	iter := l.session.Query(l.q.readWidths, counter).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	iter.Scan(&stored, &since)
	if err := iter.Close(); err != nil {
		return false, fmt.Errorf("events: read window widths of %q: %w", counter, err)
	}
	l.stats.widthReads.Add(1)
	l.learnWidths(counter, stored, read, since != nil)
	return since != nil, nil
}
