package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cassdedup/cassdedup/events"
)

// counters is how many counters a run increments: few, so that every one is hot.
const counters = 2

func counterName(ns string, i int) string { return fmt.Sprintf("%s-c%d", ns, i) }

// sent is an increment a worker recorded, kept so that it can be delivered again (the same id
// with the same time, as a redelivered message would be).
type sent struct {
	id      string
	counter string
	at      time.Time
}

// record stores one increment of 1 with events.Log.Record, retried up to three times within
// the operation's deadline as a caller of a failed Record is told to. One time in five it
// delivers again an increment the worker recorded before, which must not count twice.
func (c *client) record(ctx context.Context, rnd *rand.Rand, proc string, seq int, past *[]sent) {
	var e sent
	if n := len(*past); n > 0 && rnd.IntN(5) == 0 {
		e = (*past)[rnd.IntN(n)]
	} else {
		e = sent{id: fmt.Sprintf("%s#%d", proc, seq), counter: counterName(c.cfg.namespace, rnd.IntN(counters)), at: c.logClock()}
		*past = append(*past, e)
	}
	c.rec.add(Entry{Type: "invoke", Proc: proc, Op: "record", Key: e.counter, Arg: e.id})
	var err error
	for try := 0; try < 3; try++ {
		if err = c.log.Record(ctx, events.Event{Counter: e.counter, ID: e.id, Delta: 1, Time: e.at}); err == nil || ctx.Err() != nil || refused(err) {
			break
		}
	}
	en := Entry{Proc: proc, Op: "record", Key: e.counter, Arg: e.id}
	en.Type, en.Error, en.Msg = "ok", "", ""
	switch {
	case err == nil:
	case refused(err):
		en.Type, en.Error, en.Msg = "fail", "refused", err.Error()
	default:
		en.Type, en.Error, en.Msg = "info", "error", err.Error() // "may or may not have stored the event"
	}
	c.rec.add(en)
}

// refused reports a Record error that is certain to have stored nothing: the event was refused
// before anything was written.
func refused(err error) bool {
	return errors.Is(err, events.ErrFutureEvent) || errors.Is(err, events.ErrEventExpired) ||
		errors.Is(err, events.ErrInvalidCounter) || errors.Is(err, events.ErrInvalidEventID) || errors.Is(err, events.ErrMissingEventTime)
}

// total reads a counter's total.
func (c *client) total(ctx context.Context, rnd *rand.Rand, proc string) {
	counter := counterName(c.cfg.namespace, rnd.IntN(counters))
	c.rec.add(Entry{Type: "invoke", Proc: proc, Op: "total", Key: counter})
	n, err := c.log.Total(ctx, counter)
	e := Entry{Type: "ok", Proc: proc, Op: "total", Key: counter, Value: strconv.FormatInt(n, 10)}
	if err != nil {
		e.Type, e.Value, e.Error, e.Msg = "fail", "", "error", err.Error() // a read changes nothing
	}
	c.rec.add(e)
}

// checkCounters checks each counter's totals against its increments: the final total is at
// least the increments acknowledged and at most those plus the ones of unknown outcome; a
// total read during the run counts at least every increment acknowledged before the read
// began, and at most every increment invoked before it ended.
func checkCounters(history []Entry, final map[string]int64) []violation {
	acked := map[string]map[string]int64{}   // counter → id → first ok's end
	invoked := map[string]map[string]int64{} // counter → id → first invocation
	for _, e := range history {
		if e.Op != "record" {
			continue
		}
		m := invoked
		if e.Type == "ok" {
			m = acked
		} else if e.Type != "invoke" {
			continue
		}
		if m[e.Key] == nil {
			m[e.Key] = map[string]int64{}
		}
		if _, seen := m[e.Key][e.Arg]; !seen {
			m[e.Key][e.Arg] = e.Mono
		}
	}
	var vs []violation
	for _, k := range sortedKeys(final) {
		lo, hi := int64(len(acked[k])), int64(len(invoked[k]))
		if t := final[k]; t < lo || t > hi {
			vs = append(vs, violation{Check: "counter-total", Key: k,
				Detail: fmt.Sprintf("final total %d, %d increments acknowledged, %d invoked", t, lo, hi)})
		}
	}
	return append(vs, checkTotalReads(history, acked, invoked)...)
}

// checkTotalReads checks every total read during the run against the increments around it.
func checkTotalReads(history []Entry, acked, invoked map[string]map[string]int64) []violation {
	var vs []violation
	open := map[string]Entry{}
	for _, e := range history {
		if e.Op != "total" || e.Proc == "final" {
			continue
		}
		if e.Type == "invoke" {
			open[e.Proc] = e
			continue
		}
		inv, ok := open[e.Proc]
		delete(open, e.Proc)
		if !ok || e.Type != "ok" {
			continue
		}
		t, _ := strconv.ParseInt(e.Value, 10, 64)
		lo, hi := countBefore(acked[e.Key], inv.Mono), countBefore(invoked[e.Key], e.Mono)
		if t < lo || t > hi {
			vs = append(vs, violation{Check: "counter-read", Key: e.Key,
				Detail: fmt.Sprintf("%s read %d at %s; %d increments were acknowledged before it began, %d invoked before it ended", e.Proc, t, e.Wall, lo, hi)})
		}
	}
	return vs
}

func countBefore(m map[string]int64, mono int64) int64 {
	n := int64(0)
	for _, at := range m {
		if at < mono {
			n++
		}
	}
	return n
}
