package bloom

import (
	"context"
	"fmt"
	"time"
)

// KeySource yields the keys of one ownership scope that are still within the retention, for
// example by reading a consumer group partition's recent processed_messages. It calls yield for
// each key and stops, returning its error, if yield returns one. written is the latest time the
// key may have been written (for an hourly bucket, the end of the hour); a zero time means
// unknown and is taken as now, which is safe but ages the key out later. It returns ctx.Err()
// when ctx ends. It is a plain function type (an alias), so packages that do not import this one
// (lwt.KeySource) name the same type.
type KeySource = func(ctx context.Context, yield func(key string, written time.Time) error) error

// checkEvery is how many keys a warm-up loads between checks of its context and ownership: often
// enough to stop within microseconds, rarely enough to cost nothing measurable.
const checkEvery = 1024

// WarmUp takes ownership of the scope at epoch: it empties the filter, loads every key src
// yields, and on success makes the PreCheck warm. epoch must be greater than any epoch seen
// before (ErrStaleEpoch). Keys checked while warming are recorded too, so none processed during
// the load is lost. A warm-up costs no memory beyond the filter, which is allocated up front, and
// time proportional to the keys loaded, bounded by WithWarmUpLimit and by ctx. On any error the
// PreCheck is cold and every answer takes the LWT path; call WarmUp again to retry.
func (p *PreCheck) WarmUp(ctx context.Context, epoch uint64, src KeySource) error {
	if src == nil {
		return ErrNilKeySource
	}
	if err := p.begin(epoch); err != nil {
		return err
	}
	start := time.Now()
	var loaded, skipped uint64
	var now time.Time
	err := src(ctx, func(key string, written time.Time) error {
		if (loaded+skipped)%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if p.word.Load() != pack(epoch, Warming) {
				return ErrOwnershipChanged
			}
			// One clock read per batch: rotating on a slightly old now only keeps keys longer.
			now = p.f.c.now()
		}
		if loaded == p.limit {
			return fmt.Errorf("%w: more than %d keys", ErrWarmUpLimit, p.limit)
		}
		if written.IsZero() {
			// Unknown write time: take it as now, read now, since the key may have been
			// written after the batch began.
			written = p.f.c.now()
		}
		if p.f.c.addAt(key, written, now) {
			loaded++
		} else {
			skipped++ // older than the retention: its row has expired too
		}
		return nil
	})
	if err == nil {
		err = ctx.Err() // a source that ignored ctx must not make us warm after the deadline
	}
	return p.finish(epoch, err, loaded, skipped, time.Since(start))
}

func (p *PreCheck) begin(epoch uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, _ := unpack(p.word.Load())
	if epoch <= cur || epoch >= 1<<62 {
		return fmt.Errorf("%w: %d after %d", ErrStaleEpoch, epoch, cur)
	}
	p.word.Store(pack(epoch, Warming))
	// Reset after the state change: Checks that started before it answer NotWarm when they see
	// the new word, and Checks after it record into the emptied filter.
	p.f.Reset()
	return nil
}

func (p *PreCheck) finish(epoch uint64, err error, loaded, skipped uint64, d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.word.Load() != pack(epoch, Warming) {
		if err == nil {
			err = ErrOwnershipChanged
		}
		return err
	}
	if err != nil {
		p.word.Store(pack(epoch, Cold))
		return err
	}
	p.word.Store(pack(epoch, Warm))
	p.warm = warmStats{warmUps: p.warm.warmUps + 1, keys: loaded, skipped: skipped, duration: d}
	return nil
}
