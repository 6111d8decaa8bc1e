package outbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/gocql/gocql"
)

// WithKeyOrder: a run's events share one key, its intent lives in that key's shard and carries
// the key (order_key), and a relay publishes the intents of a key one after the other, in
// staging order, holding back each while an earlier one of its key is unsettled.

// takeKey checks, under WithKeyOrder, that events carry the key of the run's events staged so
// far (the first one gives it). The caller holds s.mu.
func (s *staged) takeKey(events []Event) error {
	if !s.o.cfg.keyOrder {
		return nil
	}
	for i, e := range events {
		if !s.keyTaken {
			s.orderKey, s.keyTaken = e.Key, true
			continue
		}
		if e.Key != s.orderKey {
			return fmt.Errorf("%w: event %d has key %q, the run's events have key %q", ErrMixedKeys, i, e.Key, s.orderKey)
		}
	}
	return nil
}

// shard is the shard of the run's intent: its events' key's under WithKeyOrder, its
// operation's otherwise (and for a run of unkeyed events).
func (s *staged) shard() int {
	return s.o.cfg.intentShard(s.rec.namespace, s.rec.key, s.orderKey)
}

// orderKeyValue binds the intent's order_key: the key, or unset (no cell, no tombstone) for an
// intent that is not ordered.
func (s *staged) orderKeyValue() any {
	if s.orderKey == "" {
		return gocql.UnsetValue
	}
	return s.orderKey
}

// intentShard is the shard of the intent of operation (namespace, key) whose events' key is
// orderKey ("" when it is not ordered: no WithKeyOrder, or events without a key).
func (c config) intentShard(namespace, key, orderKey string) int {
	if orderKey == "" {
		return shardOf(namespace, key, c.shards)
	}
	return keyShard(orderKey, c.shards)
}

// keyShard is the shard of every intent of events of key k under WithKeyOrder: k alone
// decides, so the events of one key staged in any namespace share a shard and one relay.
func keyShard(k string, shards int) int {
	return int(xxhash.Sum64String(k) % uint64(shards))
}

// orderKeyOf is the key of msgs under WithKeyOrder when they all carry one, else "" (not
// ordered): what an operator's replay writes in the intent it requeues.
func (c config) orderKeyOf(msgs []Message) string {
	if !c.keyOrder || len(msgs) == 0 {
		return ""
	}
	for _, m := range msgs[1:] {
		if m.Key != msgs[0].Key {
			return ""
		}
	}
	return msgs[0].Key
}

// orderKeyValue binds the order_key of an intent written by an operator's replay.
func orderKeyValue(k string) any {
	if k == "" {
		return gocql.UnsetValue
	}
	return k
}

// inKeyOrder starts a pass of sh under WithKeyOrder: it forgets the keys held in the last pass
// and returns the buckets read (and their reads, which stay paired) in the order to work them:
// oldest first, since an earlier bucket may hold an earlier event of a key. A closed bucket
// that this pass did not read (past the sweep's limit, while a relay catches up) may hold one
// too, so no bucket after it is worked: those wait until the sweep reaches them, and a relay
// catching up publishes oldest first.
func (r *Relay) inKeyOrder(sh *shard, buckets []int64, reads []bucketRead, now time.Time) ([]int64, []bucketRead) {
	sh.blocked = map[string]bool{}
	idx := make([]int, len(buckets))
	listed := make(map[int64]bool, len(buckets))
	for i, b := range buckets {
		idx[i] = i
		listed[b] = true
	}
	sort.Slice(idx, func(i, j int) bool { return buckets[idx[i]] < buckets[idx[j]] })
	limit := int64(math.MaxInt64)
	width := int64(r.cfg.bucket / time.Second)
	for b := sh.frontier; b <= r.cfg.bucketOf(now); b += width {
		if !listed[b] {
			limit = b
			break
		}
	}
	var outB []int64
	var outR []bucketRead
	for _, i := range idx {
		if buckets[i] < limit {
			outB, outR = append(outB, buckets[i]), append(outR, reads[i])
		}
	}
	return outB, outR
}

// stagedBefore is the order in which a bucket's intents are worked, the same on every pass
// whichever read found them (a whole read, or the arrivals): by staging time (to the
// millisecond, as stored), then by operation. WithKeyOrder publishes a key's events in it.
func stagedBefore(a, b intent) bool {
	switch {
	case !a.stagedAt.Equal(b.stagedAt):
		return a.stagedAt.Before(b.stagedAt)
	case a.namespace != b.namespace:
		return a.namespace < b.namespace
	case a.key != b.key:
		return a.key < b.key
	}
	return a.fence < b.fence
}

// errHeld is the last error recorded in a held intent: why it is not published yet.
var errHeld = errors.New("outbox: held back (WithKeyOrder): an earlier event of its key is not published, dropped or parked yet")

// holdBack looks at v, the next intent of sh in staging order, under WithKeyOrder before the
// relay's usual verdicts. An intent still undecided, unreadable or backing off holds its key
// for the rest of the pass; a committed one whose key is held is held too (true), with the mark
// to write, if any (see heldMark). A dropped or parked intent holds nothing: its events will
// not be published, so the ones after it need not wait.
func (r *Relay) holdBack(sh *shard, v settled, now time.Time, st *Stats) (bool, *mark) {
	k := v.in.orderKey
	if k == "" {
		return false, nil
	}
	switch {
	case v.err != nil, v.dec == wait, v.dec == publish && v.in.attempts > 0 && now.Before(v.in.nextAttempt):
		sh.blocked[k] = true
	case v.dec == publish && sh.blocked[k]:
		st.Held++
		return true, r.heldMark(v, now)
	}
	return false, nil
}

// heldMark is what a held committed intent gets written: once, that its run committed, with
// the copy of its events, so it is published from the copy whatever happens to its record
// while it waits; and, should it still be held half the grace after its record's expiry, the
// parking (reason stalled) that every unpublished event gets before its row could expire. Nil
// when there is nothing to write.
func (r *Relay) heldMark(v settled, now time.Time) *mark {
	if !v.in.expiresAt.IsZero() && now.After(v.in.expiresAt.Add(r.cfg.grace/2)) {
		return &mark{v: v, state: StateParked, reason: ReasonStalled, attempts: v.in.attempts, err: errHeld}
	}
	if v.in.committed || len(v.cell) == 0 {
		return nil
	}
	next := v.in.nextAttempt
	if next.IsZero() {
		next = now
	}
	return &mark{v: v, attempts: v.in.attempts, next: next, err: errHeld}
}

// publishInKeyOrder publishes the due intents of a bucket under WithKeyOrder and returns their
// marks. It publishes them in waves, each carrying at most one intent per key (in staging
// order), the next wave only the keys whose intent the last one published: so an intent is
// published only once every earlier one of its key was, whatever a Publisher does with the rest
// of a call that failed in part. The intents of a key whose publication failed in the pass are
// held.
func (r *Relay) publishInKeyOrder(ctx context.Context, sh *shard, due []settled, st *Stats) ([]mark, error) {
	now := r.cfg.now()
	var marks []mark
	var errs []error
	// The keys whose publication failed in this call. Not sh.blocked: an intent may be due
	// before a later one of its key that is undecided, and that one holds only those after it.
	failed := map[string]bool{}
	for len(due) > 0 {
		var wave, rest []settled
		inWave := map[string]bool{}
		for _, v := range due {
			k := v.in.orderKey
			switch {
			case k != "" && failed[k]:
				st.Held++
				if m := r.heldMark(v, now); m != nil {
					marks = append(marks, *m)
				}
			case k != "" && inWave[k]:
				rest = append(rest, v)
			default:
				inWave[k] = true
				wave = append(wave, v)
			}
		}
		if len(wave) == 0 {
			break
		}
		outcome, pst, err := r.publishAll(ctx, sh, wave)
		st.add(pst)
		errs = append(errs, err)
		marks = append(marks, r.afterPublish(wave, outcome, st)...)
		stopped := false
		for i, v := range wave {
			if outcome[i] == nil {
				continue
			}
			// Held for the rest of the pass even when parked now: the next pass finds it
			// settled once its mark is written, and only then are the later ones published.
			if v.in.orderKey != "" {
				failed[v.in.orderKey], sh.blocked[v.in.orderKey] = true, true
			}
			stopped = stopped || errors.Is(outcome[i], errNotTried)
		}
		if stopped {
			// The publisher looked down, or the lease ended: the rest stays pending, its keys held.
			for _, v := range rest {
				if v.in.orderKey != "" {
					sh.blocked[v.in.orderKey] = true
				}
			}
			break
		}
		due = rest
	}
	return marks, errors.Join(errs...)
}
