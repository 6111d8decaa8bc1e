package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// countRows adds n events written to counter at now to its rate, and once a period ends judges
// the width its windows should have (see wantWidth), if the Log counted that period whole: its
// first period of a counter starts at its first write, and would read as cold. A write after at
// least one whole period without one judges the span from the last period written to this one:
// a counter written less often than once a period (most pages of a site) never has two periods
// in a row, and would keep the window width, an index row and a fold per event, for good.
func (l *Log) countRows(counter string, n int, now time.Time) {
	if l.cfg.hotWidth == l.cfg.width && l.cfg.coldWidth == l.cfg.width {
		return // widths by traffic are off
	}
	p := now.Truncate(ratePeriod)
	s := l.widths
	s.mu.Lock()
	r, ok := s.rates[counter]
	if ok && r.period.Equal(p) {
		r.n += n
		s.mu.Unlock()
		return
	}
	if !ok && len(s.rates) >= activeMax {
		clear(s.rates)
	}
	var rate float64
	next := ok && r.period.Add(ratePeriod).Equal(p)
	gap := ok && r.period.Add(ratePeriod).Before(p)
	judge := (next && r.full) || gap
	if judge {
		rate = float64(r.n) / p.Sub(r.period).Seconds()
	}
	s.rates[counter] = &rateCount{period: p, n: n, full: next}
	s.mu.Unlock()
	if !judge {
		return
	}
	ws := l.widthsNow(counter)
	cur, _ := ws.last(l.cfg.width)
	if w := l.wantWidth(cur, rate); w != cur {
		s.mu.Lock()
		s.wants[counter] = w
		s.mu.Unlock()
	}
}

// wantWidth returns the width a counter's windows should have, now of width cur, at rate
// events per second: hot at HotRate and over, until under half of it; cold under ColdRate,
// until twice it; the window width otherwise.
func (l *Log) wantWidth(cur time.Duration, rate float64) time.Duration {
	c := &l.cfg
	switch {
	case rate >= HotRate || (cur == c.hotWidth && rate >= HotRate/2):
		return c.hotWidth
	case rate < ColdRate || (cur == c.coldWidth && rate < 2*ColdRate):
		return c.coldWidth
	}
	return c.width
}

// switchWidth adds the entry a counter's traffic called for, if any (see countRows): from the
// first whole second widthSwitchAhead from now, after the counter's last entry. The write is
// conditional (the row exists), bounded by widthCommitBound, and settled by a serial read when
// its outcome is unknown; a failure leaves the entries as they were, and the next period's
// judgement tries again. Errors are counted, not returned: the event that triggered it is
// stored already.
func (l *Log) switchWidth(ctx context.Context, counter string) {
	s := l.widths
	s.mu.Lock()
	w, ok := s.wants[counter]
	delete(s.wants, counter)
	s.mu.Unlock()
	if !ok {
		return
	}
	running, _ := s.proposing.Enter(counter, struct{}{})
	defer s.proposing.Leave(counter)
	if running {
		return
	}
	ws := l.widthsNow(counter)
	cur, last := ws.last(l.cfg.width)
	now := l.cfg.Now()
	since := now.Add(l.widthSwitchAhead() + time.Second - 1).Truncate(time.Second).UTC()
	if cur == w || !since.After(last) || !now.Before(ws.until) {
		return
	}
	if err := l.writeWidth(ctx, counter, since, w); err != nil {
		l.stats.widthFailures.Add(1)
		return
	}
	l.stats.widthSwitches.Add(1)
	l.learnWidths(counter, map[time.Time]int{since: int(w / time.Millisecond)}, time.Time{}, true)
}

// writeWidth adds the entry (since, w) to counter's widths, conditionally on the row existing,
// within widthCommitBound.
func (l *Log) writeWidth(ctx context.Context, counter string, since time.Time, w time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, widthCommitBound)
	defer cancel()
	ms := int(w / time.Millisecond)
	q := l.session.Query(l.q.addWidth, map[time.Time]int{since: ms}, counter)
	reached := func(row cas.Row, found bool) bool {
		stored, _ := row["widths"].(map[time.Time]int)
		got, ok := stored[since]
		return found && ok && got == ms
	}
	applied, _, err := cas.Resolve(ctx, cas.Conditional{
		Op: "width", Write: q, Read: l.session.Query(l.q.readWidths, counter), Applied: reached,
		Patience: widthCommitBound / 2, Observe: observe.ObserveCAS(l.cfg.Observer, observe.Key{counter}),
	}, l.cfg.Consistency, l.cfg.Serial)
	if err != nil {
		return fmt.Errorf("events: window width of %q from %v: %w", counter, since, err)
	}
	if !applied {
		return fmt.Errorf("events: window width of %q from %v: the counter has no row", counter, since)
	}
	return nil
}
