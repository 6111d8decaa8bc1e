package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// shard is a shard this relay holds: its lease claim and its cursor.
type shard struct {
	id       int
	claim    *lwt.Claim
	frontier int64          // the first bucket not yet swept
	pending  map[int64]bool // swept buckets that still hold pending intents
	gap      error          // reported by the pass that claimed the shard: its cursor was too old
	// open holds, per open bucket, the arrivals read so far and the intents found and not yet
	// settled (see arrivals.go); claimedAt tells the buckets another relay may have worked.
	open      map[int64]*openBucket
	claimedAt time.Time
	// Under WithKeyOrder, the keys held in this pass: an earlier intent of theirs is unsettled.
	blocked map[string]bool
}

// acquire claims shard s if it is free, and loads its cursor; nil when another relay holds it.
func (r *Relay) acquire(ctx context.Context, s int) (*shard, error) {
	claim, rec, err := r.leases.Begin(ctx, lwt.Key{r.cfg.name, s}, nil)
	switch {
	case errors.Is(err, lwt.ErrInProgress):
		return nil, nil
	case err != nil:
		return nil, err
	case rec != nil:
		return nil, fmt.Errorf("outbox: shard %d: lease record is %s", s, rec.Status)
	}
	row, _, err := cas.ReadSerial(ctx, r.session.Query(r.st.readCursor, r.cfg.name, s), r.cfg.serial)
	if err != nil {
		_ = r.leases.Release(ctx, claim, []byte("cursor unreadable"))
		return nil, err
	}
	sh := &shard{id: s, claim: claim, pending: map[int64]bool{}, open: map[int64]*openBucket{}, claimedAt: r.cfg.now()}
	if n, _ := row["shards"].(int); n != 0 && n != r.cfg.shards {
		_ = r.leases.Release(ctx, claim, []byte("shard count changed"))
		return nil, fmt.Errorf("%w: stored %d, configured %d", ErrShardCountChanged, n, r.cfg.shards)
	}
	if f, ok := row["frontier"].(int64); ok && f != 0 {
		sh.frontier = f
		// A group whose relays were all away longer than an intent lives (the retention, the
		// grace and a bucket) may have lost intents to their TTL unread: say so, once.
		if oldest := r.cfg.bucketOf(r.cfg.now().Add(-(r.cfg.retention + r.cfg.grace + r.cfg.bucket + r.cfg.horizon))); f < oldest {
			sh.gap = fmt.Errorf("%w: shard %d was last swept up to %v, longer ago than an intent lives (retention %v + grace %v): intents staged before %v may have expired unread",
				ErrOutageTooLong, s, time.Unix(f, 0).UTC(), r.cfg.retention, r.cfg.grace, time.Unix(oldest, 0).UTC())
			r.cfg.logger.ErrorContext(ctx, "outbox relay: the relay group was away longer than intents live", "shard", s, "error", sh.gap)
		}
	} else {
		sh.frontier = r.freshFrontier()
	}
	if p, ok := row["pending"].([]int64); ok {
		for _, b := range p {
			sh.pending[b] = true
		}
	}
	return sh, nil
}

// freshFrontier is where a shard no relay of this name has swept starts: a retention back, as
// anything older has no record left to settle by, but not before the layout was recorded. Every
// stager checks the layout before its first intent, so none staged earlier than that, by a clock
// within the horizon of the recorder's (twice the horizon, for both clocks). Without this bound a
// new relay group read a day of empty partitions (1,440 buckets of every shard at the defaults)
// while the service it had just joined was taking its first orders.
func (r *Relay) freshFrontier() int64 {
	from := r.cfg.now().Add(-r.cfg.retention - r.cfg.horizon)
	if since := r.layout.recorded(); !since.IsZero() {
		if first := since.Add(-2 * r.cfg.horizon); first.After(from) {
			from = first
		}
	}
	return r.cfg.bucketOf(from)
}

// closed reports whether bucket b has ended more than the horizon ago: no intent can still
// land in it (see WithHorizon), so once swept only its pending intents need reading again.
func (r *Relay) closed(b int64, now time.Time) bool {
	end := time.Unix(b, 0).Add(r.cfg.bucket + r.cfg.horizon)
	return !now.Before(end)
}

// work renews the shard's lease if due, then works its buckets and moves its cursor.
func (r *Relay) work(ctx context.Context, sh *shard) (Stats, error) {
	if err := r.renewIfDue(ctx, sh); err != nil {
		return Stats{}, err
	}
	now := r.cfg.now()
	open, buckets := r.bucketsToWork(sh, now)
	// Under WithKeyOrder every open bucket is read whole on each pass, as before arrivals: an
	// arrival carries no event key, and holding a key back needs every pending intent of it.
	if !r.cfg.keyOrder {
		r.trackOpen(sh, open, now)
	}
	reads := r.readAll(ctx, sh, buckets, now)
	var st Stats
	for _, rd := range reads {
		st.RowsRead += rd.scanned
	}
	if r.cfg.keyOrder {
		buckets, reads = r.inKeyOrder(sh, buckets, reads, now)
	}
	remaining, werr := r.workBuckets(ctx, sh, buckets, reads, &st)
	if r.advance(sh, remaining, now) {
		if err := r.saveCursor(ctx, sh); err != nil {
			return st, errors.Join(werr, err)
		}
	}
	return st, werr
}

// bucketsToWork lists the shard's buckets for this pass, in the order they are worked: the
// open ones first, so fresh commits are published at once even while a relay catches up on
// closed ones; then the pending ones; then up to maxSweep closed ones from the frontier. open is
// the open ones alone.
func (r *Relay) bucketsToWork(sh *shard, now time.Time) (open, buckets []int64) {
	width := int64(r.cfg.bucket / time.Second)
	var sweep []int64
	for b := sh.frontier; b <= r.cfg.bucketOf(now); b += width {
		switch {
		case !r.closed(b, now):
			open = append(open, b)
		case len(sweep) < r.cfg.maxSweep:
			sweep = append(sweep, b)
		}
	}
	for b := range sh.pending {
		buckets = append(buckets, b)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
	return open, append(append(open[:len(open):len(open)], buckets...), sweep...)
}

// workBuckets publishes what each bucket's read found, renewing the lease between buckets, and
// returns how many intents each bucket worked still holds pending; it stops at the first error.
func (r *Relay) workBuckets(ctx context.Context, sh *shard, buckets []int64, reads []bucketRead, st *Stats) (map[int64]int, error) {
	remaining := map[int64]int{}
	for i, b := range buckets {
		if err := r.renewIfDue(ctx, sh); err != nil {
			return remaining, err
		}
		bs, n, err := r.bucket(ctx, sh, b, reads[i])
		st.add(bs)
		if err != nil {
			return remaining, err
		}
		remaining[b] = n
	}
	return remaining, nil
}

// advance records which closed buckets still hold pending intents and moves the frontier past
// the closed buckets worked to the end; it reports whether the cursor changed.
func (r *Relay) advance(sh *shard, remaining map[int64]int, now time.Time) (changed bool) {
	for b, n := range remaining {
		if !r.closed(b, now) {
			continue
		}
		if keep := n > 0; keep != sh.pending[b] {
			changed = true
			if keep {
				sh.pending[b] = true
			} else {
				delete(sh.pending, b)
			}
		}
	}
	width := int64(r.cfg.bucket / time.Second)
	for {
		if _, done := remaining[sh.frontier]; !done || !r.closed(sh.frontier, now) {
			break
		}
		sh.frontier += width
		changed = true
	}
	return changed
}

// renewIfDue renews the shard's lease once a third of it has passed, and fails with ErrFenced
// when it has run out by this relay's clock: a successor may hold the shard by now.
func (r *Relay) renewIfDue(ctx context.Context, sh *shard) error {
	now := r.cfg.now()
	if !now.Before(sh.claim.LeaseUntil) {
		return fmt.Errorf("%w: %w at %v", ErrFenced, errLeaseRanOut, sh.claim.LeaseUntil)
	}
	if sh.claim.LeaseUntil.Sub(now) < r.cfg.lease*2/3 {
		return r.leases.Renew(ctx, sh.claim)
	}
	return nil
}

// errLeaseRanOut: the relay's lease of a shard ran out by its own clock (a pass that came late,
// a pause): it gives the shard up, as a fenced one.
var errLeaseRanOut = errors.New("lease ran out")

// bucketRead is one partition's pending intents and relay fence, or the error reading it.
type bucketRead struct {
	rows    []intent
	fence   int64
	scanned int // rows the node returned, settled ones included
	err     error
	marked  func([]mark) // if not nil, told the marks that applied
}

// readAll reads the buckets of shard sh, a few at a time: most are empty, and a relay catching
// up reads many. Of the open buckets tracked (trackOpen) only the new arrivals are read
// (readOpen); the others are read whole.
func (r *Relay) readAll(ctx context.Context, sh *shard, buckets []int64, now time.Time) []bucketRead {
	out := make([]bucketRead, len(buckets))
	inParallel(len(buckets), func(i int) {
		if sh.open[buckets[i]] != nil { // read only: trackOpen filled the map before
			out[i] = r.readOpen(ctx, sh, buckets[i], now)
			return
		}
		var rows []intent
		rows, out[i].fence, out[i].scanned, out[i].err = r.scanBucket(ctx, buckets[i], sh.id)
		out[i].rows = pendingOnly(rows)
	})
	return out
}

// saveCursor writes the shard's cursor, fenced on the relay's claim.
func (r *Relay) saveCursor(ctx context.Context, sh *shard) error {
	pending := make([]int64, 0, len(sh.pending))
	for b := range sh.pending {
		pending = append(pending, b)
	}
	ttl := int(sh.claim.ExpiresAt.Sub(r.cfg.now()).Seconds())
	if ttl < 1 {
		return lwt.ErrLeaseLost
	}
	applied, _, err := cas.UpdateIf(ctx, r.session.Query(r.st.writeCursor, ttl, r.cfg.shards, sh.frontier, pending,
		r.cfg.name, sh.id, sh.claim.Owner, sh.claim.Fence).Consistency(r.cfg.consistency), r.cfg.serial)
	if err != nil {
		return fmt.Errorf("outbox: save cursor: %w", err)
	}
	if !applied {
		return ErrFenced
	}
	return nil
}
