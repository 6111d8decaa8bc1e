package lwt

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Defaults and limits of a scan.
const (
	DefaultScanSplits      = 64   // token ranges the ring is cut into
	DefaultScanParallelism = 4    // ranges read at once
	DefaultScanPageSize    = 500  // rows per round trip
	DefaultScanRate        = 2000 // rows per second over the whole scan
	MaxScanSplits          = 65536
	MaxScanParallelism     = 64
	MaxScanPageSize        = 10000
)

// ScanOptions bound a scan of a store's table. Zero fields take the defaults.
type ScanOptions struct {
	// Splits is how many equal token ranges the ring is cut into; each is read with paged
	// range queries, so no query touches more than one range. Default 64.
	Splits int
	// Parallelism is how many ranges are read at once. Default 4.
	Parallelism int
	// PageSize is how many rows one round trip returns. Default 500.
	PageSize int
	// RowsPerSecond caps the rows read per second by the whole scan, so a scan of a large
	// table does not crowd out the traffic it serves. Default 2000; negative for no limit.
	RowsPerSecond int
	// Consistency of the range reads; default the store's (WithConsistency). A scan reads
	// without Paxos: a record changing meanwhile may show its previous state, so act on a
	// finding only after reading the record again (Inspect, or ReleaseKey and Delete, which do).
	Consistency gocql.Consistency
}

func (o ScanOptions) withDefaults(commit gocql.Consistency) (ScanOptions, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Splits, DefaultScanSplits)
	def(&o.Parallelism, DefaultScanParallelism)
	def(&o.PageSize, DefaultScanPageSize)
	def(&o.RowsPerSecond, DefaultScanRate)
	if o.Consistency == 0 {
		o.Consistency = commit
	}
	switch {
	case o.Splits < 1 || o.Splits > MaxScanSplits:
		return o, invalidOption("ScanOptions.Splits", "%d is not 1..%d", o.Splits, MaxScanSplits)
	case o.Parallelism < 1 || o.Parallelism > MaxScanParallelism:
		return o, invalidOption("ScanOptions.Parallelism", "%d is not 1..%d", o.Parallelism, MaxScanParallelism)
	case o.PageSize < 1 || o.PageSize > MaxScanPageSize:
		return o, invalidOption("ScanOptions.PageSize", "%d is not 1..%d", o.PageSize, MaxScanPageSize)
	}
	return o, nil
}

// ScanStats counts what a scan read.
type ScanStats struct {
	Ranges  int   // token ranges read to the end
	Pages   int64 // round trips
	Rows    int64 // records read
	Matched int64 // records passed to yield
}

// Scan reads every record of the table: the ring is cut into token ranges, read by a few
// workers at once in pages, at a bounded rate (see ScanOptions). yield is called for each
// record, never concurrently; its Record has no Fingerprint and no Result (they are not read).
// An error from yield stops the scan and is returned, as is the first read error. The scan
// assumes the Murmur3 partitioner, Cassandra's default. Its goroutines end before it returns.
func (s *Store) Scan(ctx context.Context, opts ScanOptions, yield func(Key, *Record) error) (ScanStats, error) {
	if err := s.checkCall(ctx); err != nil {
		return ScanStats{}, err
	}
	if yield == nil {
		return ScanStats{}, fmt.Errorf("%w: nil yield", ErrInvalidArgument)
	}
	opts, err := opts.withDefaults(s.cfg.commit)
	if err != nil {
		return ScanStats{}, err
	}
	sc := &scan{store: s, opts: opts, yield: yield, pace: newPacer(opts.RowsPerSecond), stmt: s.adm.scan}
	return sc.run(ctx)
}

// StuckReason says why a record counts as stuck.
type StuckReason string

// The reasons a record is stuck.
const (
	// StuckLeaseExpired: a claim STARTED whose lease has expired (Record.LeaseLive): its
	// worker died or stalled, and no retry has come to take the key over.
	StuckLeaseExpired StuckReason = "lease-expired"
	// StuckReleasedRepeatedly: a RELEASED record claimed at least MinAttempts times: the
	// operation keeps failing with a retryable error.
	StuckReleasedRepeatedly StuckReason = "released-repeatedly"
)

// StuckOptions are the options of ScanStuck.
type StuckOptions struct {
	ScanOptions
	// MinAttempts is how many claims a RELEASED record needs to count as stuck. Default 3.
	MinAttempts int
}

// DefaultStuckAttempts is StuckOptions.MinAttempts when none is given.
const DefaultStuckAttempts = 3

// StuckClaim is a record ScanStuck found.
type StuckClaim struct {
	Key    Key
	Record *Record
	Reason StuckReason
}

// ScanStuck scans the table (see Scan) for stuck records: claims STARTED whose lease has
// expired, and RELEASED records claimed MinAttempts times or more. yield
// is called for each, never concurrently.
func (s *Store) ScanStuck(ctx context.Context, opts StuckOptions, yield func(StuckClaim) error) (ScanStats, error) {
	if err := s.checkCall(ctx); err != nil {
		return ScanStats{}, err
	}
	if yield == nil {
		return ScanStats{}, fmt.Errorf("%w: nil yield", ErrInvalidArgument)
	}
	minAttempts := opts.MinAttempts
	if minAttempts == 0 {
		minAttempts = DefaultStuckAttempts
	}
	if minAttempts < 1 {
		return ScanStats{}, invalidOption("StuckOptions.MinAttempts", "%d is not positive", minAttempts)
	}
	var matched int64
	stats, err := s.Scan(ctx, opts.ScanOptions, func(k Key, r *Record) error {
		reason := s.stuckReason(r, minAttempts)
		if reason == "" {
			return nil
		}
		matched++
		return yield(StuckClaim{Key: k, Record: r, Reason: reason})
	})
	stats.Matched = matched
	return stats, err
}

func (s *Store) stuckReason(r *Record, minAttempts int) StuckReason {
	switch {
	case r.Status == StatusStarted && !r.LeaseLive(s.now()):
		return StuckLeaseExpired
	case r.Status == StatusReleased && r.Attempts >= minAttempts:
		return StuckReleasedRepeatedly
	}
	return ""
}

// scan is one Scan call's state.
type scan struct {
	store *Store
	opts  ScanOptions
	yield func(Key, *Record) error
	pace  *pacer
	stmt  string

	mu    sync.Mutex // serialises yield and guards stats
	stats ScanStats
}

func (sc *scan) run(ctx context.Context) (ScanStats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ranges := make(chan [2]int64)
	var wg sync.WaitGroup
	for range min(sc.opts.Parallelism, sc.opts.Splits) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range ranges {
				if err := sc.readRange(ctx, r[0], r[1]); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
feed:
	for _, r := range tokenRanges(sc.opts.Splits) {
		select {
		case ranges <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(ranges)
	wg.Wait()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if err := context.Cause(ctx); err != nil {
		return sc.stats, err
	}
	return sc.stats, nil
}

// readRange reads the records whose tokens lie in (lo, hi], a page at a time.
func (sc *scan) readRange(ctx context.Context, lo, hi int64) error {
	s := sc.store
	var state []byte
	for {
		// Setting the page state turns the driver's own paging off: each page is one request
		// here, paced before the next.
		iter := s.session.Query(sc.stmt, lo, hi).WithContext(ctx).Consistency(sc.opts.Consistency).
			PageSize(sc.opts.PageSize).PageState(state).Idempotent(true).Iter()
		n, err := sc.page(iter)
		state = iter.PageState()
		if cerr := iter.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("lwt: scan token range (%d, %d]: %w", lo, hi, cerr)
		}
		if err != nil {
			return err
		}
		sc.mu.Lock()
		sc.stats.Pages++
		sc.stats.Rows += int64(n)
		if len(state) == 0 {
			sc.stats.Ranges++
		}
		sc.mu.Unlock()
		// Every request is charged, an empty one as one row, so many small ranges are paced too.
		if err := sc.pace.wait(ctx, max(n, 1)); err != nil {
			return err
		}
		if len(state) == 0 {
			return nil
		}
	}
}

// page passes the rows of one page to yield and returns how many there were.
func (sc *scan) page(iter *gocql.Iter) (int, error) {
	n := 0
	for {
		row, ok, err := cas.NextRow(iter)
		if err != nil || !ok {
			return n, err
		}
		n++
		key := make(Key, len(sc.store.keyCols))
		for i, c := range sc.store.keyCols {
			key[i] = row[strings.Trim(c, `"`)]
		}
		sc.mu.Lock()
		err = sc.yield(key, recordFromRow(row))
		sc.mu.Unlock()
		if err != nil {
			return n, err
		}
	}
}

// tokenRanges cuts the Murmur3 ring (-2^63, 2^63-1] into n contiguous ranges of about equal
// width. Murmur3 never gives a key the token -2^63, so the first range's open start loses none.
func tokenRanges(n int) [][2]int64 {
	step := math.MaxUint64 / uint64(n)
	out := make([][2]int64, n)
	lo := int64(math.MinInt64)
	for i := range out {
		hi := int64(uint64(lo) + step) // two's complement: moves lo up by step
		if i == n-1 {
			hi = math.MaxInt64
		}
		out[i] = [2]int64{lo, hi}
		lo = hi
	}
	return out
}

// pacer spaces reads so that rows per second stay at most rate, over every worker of a scan.
// It runs on real time (not the store's clock): it paces traffic, it judges no lease.
type pacer struct {
	mu     sync.Mutex
	next   time.Time
	perRow time.Duration
}

func newPacer(rate int) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{perRow: time.Second / time.Duration(rate)}
}

// wait charges n rows just read and waits until the scan is back under its rate.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil {
		return ctx.Err()
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(n) * p.perRow)
	until := p.next
	p.mu.Unlock()
	return loop.Sleep(ctx, time.Until(until))
}
