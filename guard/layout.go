package guard

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// LayoutSwitchDelay is how far ahead of the clock a layout change takes effect: a guard whose
// window or buckets differ from its group's recorded layout records its own from the first
// window boundary at least this far ahead. Guards reread a group's layouts before they look up
// a time past the half of it (less lwt.MaxClockSkew) from their last read, so every guard
// follows a change before the first message time it applies to, and a message is always looked
// up in the partition where it was written.
const LayoutSwitchDelay = 10 * time.Minute

// firstSwitchDelay is how far ahead of the clock the configured layout takes over from the
// legacy one when a group is first recorded. No guard of this release has written for the group
// yet, so it only needs to cover the message times, up to lwt.MaxClockSkew ahead, that an
// earlier release may have written with the legacy layout, and the walks of readers that found
// no layout (up to the skew ahead of their clocks, which may run a skew ahead).
const firstSwitchDelay = 3 * lwt.MaxClockSkew

// layoutWriteTimeout bounds a layout change's LWT: the change is safe only if it commits well
// within LayoutSwitchDelay/2 less the clock skew of its since being computed.
const layoutWriteTimeout = 30 * time.Second

// layout places a group's messages in processed_messages_bucketed (by message time) and its ids
// in processed_messages_by_window (by indexing time): windows of the given width, each split into
// buckets by a hash of the id.
type layout struct {
	window  int64 // seconds
	buckets int
}

// place returns the window start and bucket of id at sec (unix seconds).
func (l layout) place(sec int64, id string) (start int64, bucket int) {
	return floorTo(sec, l.window), int(xxhash.Sum64String(id) % uint64(l.buckets))
}

// floorTo truncates sec to a multiple of w, for times before 1970 too.
func floorTo(sec, w int64) int64 { return sec - ((sec%w)+w)%w }

// ceilTo rounds sec up to a multiple of w.
func ceilTo(sec, w int64) int64 { return -floorTo(-sec, w) }

func (l layout) String() string { return fmt.Sprintf("%ds x %d buckets", l.window, l.buckets) }

func (l layout) valid() bool {
	return l.window >= 1 && l.window <= 86400 && l.buckets >= 1 && l.buckets <= MaxBatchBuckets
}

// layoutEntry is one row of guard_layouts: the layout of message times from since on.
type layoutEntry struct {
	since int64
	layout
}

// layoutSpan is a layout with the times it applies to: [from, to).
type layoutSpan struct {
	layout
	from, to int64
}

// groupLayouts is what a guard read of a group's layouts.
type groupLayouts struct {
	entries    []layoutEntry // by since, ascending; the first one's since is math.MinInt64
	validUntil int64         // unix seconds: lookups of earlier times may use entries
	// recorded is when the group's first row was written (unix seconds): no guard of this
	// release indexed an id of the group before it, less the clock skew.
	recorded int64
}

// at is the layout of time sec.
func (gl *groupLayouts) at(sec int64) layout {
	i, found := slices.BinarySearchFunc(gl.entries, sec, func(e layoutEntry, s int64) int {
		switch {
		case e.since < s:
			return -1
		case e.since > s:
			return 1
		}
		return 0
	})
	if !found {
		i--
	}
	return gl.entries[i].layout
}

// spans returns the layouts of the times in [from, to].
func (gl *groupLayouts) spans(from, to int64) []layoutSpan {
	var out []layoutSpan
	for i, e := range gl.entries {
		end := int64(math.MaxInt64)
		if i+1 < len(gl.entries) {
			end = gl.entries[i+1].since
		}
		if end <= from || e.since > to {
			continue
		}
		out = append(out, layoutSpan{layout: e.layout, from: max(from, e.since), to: min(end, to+1)})
	}
	return out
}

// layoutCache holds each group's layouts, as last read, and the groups this guard has proposed
// its own layout for.
type layoutCache struct {
	mu       sync.Mutex
	groups   map[string]*groupLayouts
	proposed map[string]bool
}

// layoutOf returns the layout of m's group at t, reading the group's layouts first when the
// ones read last cannot vouch for t.
func (g *Guard) layoutOf(ctx context.Context, group string, t time.Time) (layout, error) {
	gl, err := g.layoutsOf(ctx, group, t, true)
	if err != nil {
		return layout{}, err
	}
	return gl.at(t.Unix()), nil
}

// layoutsOf returns the group's layouts, read again if the last read cannot vouch for times up
// to t. A caller that writes (write) records the group's layouts if it has none, and proposes
// this guard's; a reader (a warm-up, a listing) writes nothing, and a group without layouts is
// all in the legacy layout for it.
func (g *Guard) layoutsOf(ctx context.Context, group string, t time.Time, write bool) (*groupLayouts, error) {
	sec := t.Unix()
	g.layouts.mu.Lock()
	gl := g.layouts.groups[group]
	g.layouts.mu.Unlock()
	if gl != nil && sec < gl.validUntil {
		return gl, nil
	}
	gl, err := g.loadLayouts(ctx, group, write)
	if err != nil {
		return nil, err
	}
	if sec >= gl.validUntil {
		return nil, fmt.Errorf("%w: %v is too far ahead of the clock for the layout of group %q", ErrFutureMessage, t, group)
	}
	return gl, nil
}

// loadLayouts reads the group's layouts at the serial consistency and, for a writer, records
// the legacy and the configured layout for a group that has none, and proposes the configured
// layout once if the group's latest differs.
func (g *Guard) loadLayouts(ctx context.Context, group string, write bool) (*groupLayouts, error) {
	read := g.cfg.Now()
	entries, recorded, err := g.readLayouts(ctx, group)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 && !write {
		// Nothing of this release was written for the group, and the first layout recorded
		// applies from firstSwitchDelay ahead of its writer's clock: up to then, everything is
		// in the legacy layout. Not cached, so the first writer's rows are read next time.
		legacy := layout{window: int64(g.cfg.legacyWindow / time.Second), buckets: g.cfg.legacyBuckets}
		return &groupLayouts{entries: []layoutEntry{{since: math.MinInt64, layout: legacy}}, recorded: read.Unix(),
			validUntil: read.Add(firstSwitchDelay - lwt.MaxClockSkew).Unix()}, nil
	}
	if !write {
		return g.cache(group, read, entries, recorded), nil
	}
	g.layouts.mu.Lock()
	propose := !g.layouts.proposed[group]
	g.layouts.proposed[group] = true
	g.layouts.mu.Unlock()
	own := layout{window: int64(g.cfg.window / time.Second), buckets: g.cfg.batchBuckets}
	if len(entries) == 0 || (propose && entries[len(entries)-1].layout != own) {
		if err := g.recordLayout(ctx, group, entries, own); err != nil {
			return nil, err
		}
		read = g.cfg.Now()
		if entries, recorded, err = g.readLayouts(ctx, group); err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return nil, fmt.Errorf("guard: group %q: no layout recorded", group)
		}
	}
	return g.cache(group, read, entries, recorded), nil
}

// cache keeps the entries read at read for the times they can vouch for: a change recorded
// after read applies from LayoutSwitchDelay after its writer's clock, which may run a skew
// behind.
func (g *Guard) cache(group string, read time.Time, entries []layoutEntry, recorded int64) *groupLayouts {
	gl := &groupLayouts{entries: entries, recorded: recorded,
		validUntil: read.Add(LayoutSwitchDelay/2 - lwt.MaxClockSkew).Unix()}
	g.layouts.mu.Lock()
	g.layouts.groups[group] = gl
	g.layouts.mu.Unlock()
	return gl
}

// readLayouts reads the group's rows of guard_layouts, every one valid, and when the first was
// written (unix seconds).
func (g *Guard) readLayouts(ctx context.Context, group string) (entries []layoutEntry, recorded int64, err error) {
	iter := g.session.Query(g.selectLayouts, group).WithContext(ctx).Consistency(g.cfg.SerialRead()).Iter()
	var e layoutEntry
	var window int
	var written time.Time
	for iter.Scan(&e.since, &window, &e.buckets, &written) {
		e.window = int64(window)
		if !e.valid() {
			_ = iter.Close()
			return nil, 0, fmt.Errorf("%w: group %q has the layout %v from %d", ErrInvalidLayout, group, e.layout, e.since)
		}
		if len(entries) == 0 {
			recorded = written.Unix()
		}
		entries = append(entries, e)
	}
	if err := iter.Close(); err != nil {
		return nil, 0, fmt.Errorf("guard: read the layouts of group %q: %w", group, err)
	}
	if len(entries) > 0 && entries[0].since != math.MinInt64 {
		return nil, 0, fmt.Errorf("%w: group %q has no layout before %d", ErrInvalidLayout, group, entries[0].since)
	}
	return entries, recorded, nil
}

// recordLayout records own as the group's layout from a window boundary ahead of the clock, with
// an LWT. A group without rows gets the legacy layout before it in the same conditional batch,
// so no guard ever sees one row without the other. Whether it applied or not, the caller reads
// the rows again: another guard's concurrent change is as good as this one.
func (g *Guard) recordLayout(ctx context.Context, group string, entries []layoutEntry, own layout) error {
	ctx, cancel := context.WithTimeout(ctx, layoutWriteTimeout)
	defer cancel()
	clock := g.cfg.Now()
	now := clock.Unix()
	b := g.session.NewBatch(gocql.LoggedBatch)
	legacy := layout{window: int64(g.cfg.legacyWindow / time.Second), buckets: g.cfg.legacyBuckets}
	var since int64
	if len(entries) == 0 {
		b.Query(g.insertLayout, group, int64(math.MinInt64), int(legacy.window), legacy.buckets, clock)
		if own == legacy {
			_, _, err := cas.ExecBatch(ctx, g.session, b, g.cfg.Serial)
			return g.layoutWriteErr(group, err)
		}
		since = ceilTo(now+int64(firstSwitchDelay/time.Second), own.window)
	} else {
		last := entries[len(entries)-1].since
		since = ceilTo(max(now+int64(LayoutSwitchDelay/time.Second), last+1), own.window)
	}
	b.Query(g.insertLayout, group, since, int(own.window), own.buckets, clock)
	_, _, err := cas.ExecBatch(ctx, g.session, b, g.cfg.Serial)
	return g.layoutWriteErr(group, err)
}

// layoutWriteErr keeps an unknown outcome quiet: the serial read that follows settles it.
func (g *Guard) layoutWriteErr(group string, err error) error {
	if err == nil || cas.IsOutcomeUnknown(err) {
		return nil
	}
	return fmt.Errorf("guard: record the layout of group %q: %w", group, err)
}
