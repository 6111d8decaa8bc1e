package outbox

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// A relay finds the intents of an open bucket through their arrivals (outbox_arrivals,
// clustered by staging time) rather than by reading the intents' partition on every pass: per
// held shard and open bucket it keeps a cursor, reads the arrivals staged after it and at least
// WithArrivalLag ago, and keeps the intents found until they settle. Each intent is read once
// there, and once more by the bucket's last sweep, which reads the intents whole once the
// horizon has passed and finds what no arrival announced in time. A bucket another relay may
// have worked (it began before this relay claimed the shard) is read whole once first, so
// what that relay already published is known and not published again.

// openBucket is what a relay knows of one open bucket of a shard it holds. Only the pass of
// its shard touches it.
type openBucket struct {
	// read: the partition's intents are known up to cursor: it was read whole, or it began
	// after this relay claimed the shard (no other relay worked it).
	read    bool
	cursor  time.Time // the arrivals staged up to it (inclusive) were read
	pending map[intentID]intent
	// seen holds the intents the whole read returned that were staged after the cursor: their
	// arrivals, read later, announce nothing new.
	seen  map[arrivalID]bool
	fence int64 // the partition's relay fence as last known: ours once the relay marked there
}

type intentID struct {
	namespace, key string
	fence          int64
}

type arrivalID struct {
	intentID
	stagedAt int64 // unix milliseconds, as the node stores a timestamp
}

func idOf(in intent) intentID { return intentID{in.namespace, in.key, in.fence} }

func arrivalOf(in intent) arrivalID { return arrivalID{idOf(in), in.stagedAt.UnixMilli()} }

// trackOpen keeps the state of the shard's open buckets and forgets that of the buckets that
// closed: their last sweep reads them whole, whatever was pending in memory.
func (r *Relay) trackOpen(sh *shard, open []int64, now time.Time) {
	keep := make(map[int64]bool, len(open))
	for _, b := range open {
		keep[b] = true
		if sh.open[b] != nil {
			continue
		}
		ob := &openBucket{pending: map[intentID]intent{}, seen: map[arrivalID]bool{}}
		// A relay that held the shard before this one stopped working it before the claim, by
		// its own clock, which may run ahead of this relay's by half the horizon.
		if !time.Unix(b, 0).Before(sh.claimedAt.Add(r.cfg.horizon / 2)) {
			ob.read, ob.cursor = true, time.Unix(b, 0).Add(-time.Millisecond)
		}
		sh.open[b] = ob
	}
	for b := range sh.open {
		if !keep[b] {
			delete(sh.open, b)
		}
	}
}

// arrivedBy is how far a pass at now reads the arrivals of bucket b: up to the lag before now,
// and no further than the bucket's last millisecond.
func (r *Relay) arrivedBy(b int64, now time.Time) time.Time {
	end := time.Unix(b, 0).Add(r.cfg.bucket - time.Millisecond)
	upto := now.Add(-r.cfg.lag).Truncate(time.Millisecond)
	if upto.After(end) {
		return end
	}
	return upto
}

// readOpen reads what is new in open bucket b of shard sh and returns the intents found there
// and not yet settled, in staging order.
func (r *Relay) readOpen(ctx context.Context, sh *shard, b int64, now time.Time) bucketRead {
	ob := sh.open[b]
	rd := bucketRead{marked: func(marks []mark) { ob.settled(marks, sh.claim.Fence) }}
	upto := r.arrivedBy(b, now)
	switch {
	case !ob.read:
		rows, fence, scanned, err := r.scanBucket(ctx, b, sh.id)
		rd.scanned = scanned
		if err != nil {
			rd.err = err
			return rd
		}
		ob.read, ob.fence, ob.cursor = true, fence, upto
		for _, in := range rows {
			if in.stagedAt.After(upto) {
				ob.seen[arrivalOf(in)] = true
			}
			if in.state == "" {
				ob.pending[idOf(in)] = in
			}
		}
	case upto.After(ob.cursor):
		found, scanned, err := r.readArrivals(ctx, b, sh.id, ob.cursor, upto)
		rd.scanned = scanned
		if err != nil {
			rd.err = err
			return rd
		}
		for _, in := range found {
			if _, known := ob.pending[idOf(in)]; !known && !ob.seen[arrivalOf(in)] {
				ob.pending[idOf(in)] = in
			}
		}
		ob.cursor = upto
		for a := range ob.seen {
			if a.stagedAt <= upto.UnixMilli() {
				delete(ob.seen, a)
			}
		}
	}
	rd.rows, rd.fence = ob.sorted(), ob.fence
	return rd
}

// settled forgets the intents whose marks applied, and keeps what a failed publication taught
// of the others (their row has the events' copy now): the relay's fence is the partition's.
func (ob *openBucket) settled(marks []mark, fence int64) {
	ob.fence = fence
	for _, m := range marks {
		id := idOf(m.v.in)
		if m.state != "" {
			delete(ob.pending, id)
			continue
		}
		if in, ok := ob.pending[id]; ok {
			in.committed, in.attempts, in.nextAttempt, in.lastError = true, m.attempts, m.next, truncate(m.err.Error(), 1000)
			ob.pending[id] = in
		}
	}
}

// sorted returns the pending intents in staging order.
func (ob *openBucket) sorted() []intent {
	out := make([]intent, 0, len(ob.pending))
	for _, in := range ob.pending {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return stagedBefore(out[i], out[j]) })
	return out
}

// readArrivals reads the arrivals of partition (b, s) staged in (after, upto], as pending
// intents, and how many rows the node returned.
func (r *Relay) readArrivals(ctx context.Context, b int64, s int, after, upto time.Time) ([]intent, int, error) {
	iter := r.session.Query(r.st.arrivals, b, s, after, upto).WithContext(ctx).Consistency(r.cfg.consistency).PageSize(1000).Iter()
	var out []intent
	var in intent
	var rec *string
	var expires *time.Time
	var committed *bool
	for iter.Scan(&in.stagedAt, &in.namespace, &in.key, &in.fence, &in.owner, &rec, &expires, &committed) {
		in.record, in.expiresAt, in.committed = deref(rec), derefT(expires), deref(committed)
		in.bucket, in.shard, in.arrival = b, s, true
		out = append(out, in)
	}
	if err := iter.Close(); err != nil {
		return nil, len(out), fmt.Errorf("outbox: read arrivals of bucket %d shard %d: %w", b, s, err)
	}
	return out, len(out), nil
}
