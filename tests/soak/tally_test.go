//go:build soak

package soak

import (
	"strings"
	"sync"
	"time"
)

// tally is what the chain did, by order, from the processes' lines and the clients' answers.
type tally struct {
	mu        sync.Mutex
	acked     map[string]int64     // order → amount, once a 2xx came back (poison orders too)
	ackedAt   map[string]time.Time // order → its first 2xx
	applied   map[string]int       // order → handler runs that applied it
	lag       time.Duration        // the longest acknowledgement → effect
	published int                  // messages published, copies included
	errs      map[string]int       // role → error lines
	firstErr  map[string]string
}

func newTally() *tally {
	return &tally{acked: map[string]int64{}, ackedAt: map[string]time.Time{}, applied: map[string]int{},
		errs: map[string]int{}, firstErr: map[string]string{}}
}

func (t *tally) ack(id string, amount int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.acked[id]; !ok {
		t.acked[id], t.ackedAt[id] = amount, time.Now()
	}
}

func (t *tally) record(role string, l line) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch l.Event {
	case "published":
		t.published += len(l.Orders)
	case "applied":
		t.applied[l.Order]++
		if at, ok := t.ackedAt[l.Order]; ok && t.applied[l.Order] == 1 {
			t.lag = max(t.lag, time.Since(at))
		}
	}
	if l.Err != "" {
		t.errs[role]++
		if t.firstErr[role] == "" {
			t.firstErr[role] = l.Err
		}
	}
}

// outcome counts the acknowledged orders (poison ones apart) against their effects.
type outcome struct {
	orders, lost, twice, poisonApplied int
	expected                           int64 // the sum of the acknowledged orders' amounts
	// The first maxNamed lost orders, by id, with their amounts: what a failed run's forensics
	// start from; and every order whose handler applied it more than once (a consumer killed
	// between its effect and its marks runs it again), whose effect is then checked in the log.
	lostOrders, twiceOrders map[string]int64
}

// maxNamed bounds the orders an outcome names.
const maxNamed = 20

func (t *tally) outcome() outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := outcome{lostOrders: map[string]int64{}, twiceOrders: map[string]int64{}}
	for id, amount := range t.acked {
		if strings.HasPrefix(id, poisonPrefix) {
			if t.applied[id] > 0 {
				o.poisonApplied++
			}
			continue
		}
		o.orders++
		o.expected += amount
		switch n := t.applied[id]; {
		case n == 0:
			o.lost++
			if len(o.lostOrders) < maxNamed {
				o.lostOrders[id] = amount
			}
		case n > 1:
			o.twice++
			o.twiceOrders[id] = amount
		}
	}
	return o
}
