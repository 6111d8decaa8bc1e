package lwt

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/internal/flights"
)

// PreCheck is the Bloom pre-check of one namespace this store owns; *bloom.PreCheck satisfies
// it. Check must be atomic per key, answer ClearlyNew only when warm, and record every key it is
// asked about. Implementations must be safe for concurrent use.
type PreCheck interface {
	Check(key string) bloom.Answer
	Observe(a bloom.Answer, tableSaidNew bool)
	Owns(epoch uint64) bool
	WarmUp(ctx context.Context, epoch uint64, src bloom.KeySource) error
	Invalidate()
}

type owner struct {
	pre   PreCheck
	epoch uint64
}

// fastState is the store's fast-path state: owned namespaces and the calls running here.
type fastState struct {
	mu      sync.Mutex
	owned   map[string]*owner
	flights flights.Set[string, string] // by cacheKey, scoped by namespace
}

// Own declares that every call for namespace reaches this process from now on (a sticky router
// assigned it at epoch, which must grow on every assignment) and turns the fast path on for it:
// pre is warmed from src, which must yield every key of namespace still within the retention
// (idempotency_keys has no index by namespace; see the package doc), and from then on a key pre
// answers ClearlyNew runs fn without a claim and is recorded with PutCompleted. Own first waits
// for the namespace's calls already running here, so src need not know keys they are adding.
// The fast path applies to tables keyed by two strings (namespace, key), such as
// idempotency_keys; for others Own returns ErrInvalidKey. On a warm-up error the namespace
// takes the LWT path; call Own again to retry. Call Disown as soon as the namespace is
// reassigned or its assignment is in doubt.
func (s *Store) Own(ctx context.Context, namespace string, epoch uint64, pre PreCheck, src bloom.KeySource) error {
	if len(s.keyCols) != 2 {
		return &KeyError{Column: s.keyCols[0], Reason: "the fast path needs a table keyed by (namespace, key)"}
	}
	if err := validateKey(s.keyCols[:1], Key{namespace}, s.cfg.maxKey); err != nil {
		return err
	}
	if pre == nil || src == nil {
		return fmt.Errorf("lwt: own %q: nil pre-check or key source", namespace)
	}
	pre.Invalidate()
	o := &owner{pre: pre, epoch: epoch}
	s.fast.mu.Lock()
	if old := s.fast.owned[namespace]; old != nil && old.pre != pre {
		old.pre.Invalidate()
	}
	if s.fast.owned == nil {
		s.fast.owned = map[string]*owner{}
	}
	s.fast.owned[namespace] = o
	s.fast.mu.Unlock()
	// The wait runs inside the warm-up, after pre began recording every key it checks.
	err := pre.WarmUp(ctx, epoch, bloom.KeySourceFunc(func(ctx context.Context, yield func(string, time.Time) error) error {
		if err := s.fast.flights.Wait(ctx, namespace); err != nil {
			return err
		}
		return src.Keys(ctx, yield)
	}))
	if err != nil {
		s.fast.mu.Lock()
		if s.fast.owned[namespace] == o {
			delete(s.fast.owned, namespace)
		}
		s.fast.mu.Unlock()
		return fmt.Errorf("lwt: own %q at epoch %d: %w", namespace, epoch, err)
	}
	return nil
}

// Disown turns the fast path off for namespace and makes its pre-check cold.
func (s *Store) Disown(namespace string) {
	s.fast.mu.Lock()
	o := s.fast.owned[namespace]
	delete(s.fast.owned, namespace)
	s.fast.mu.Unlock()
	if o != nil {
		o.pre.Invalidate()
	}
}

// ownerOf returns the namespace's registered owner, nil when the store does not own it.
func (s *Store) ownerOf(namespace string) *owner {
	s.fast.mu.Lock()
	defer s.fast.mu.Unlock()
	return s.fast.owned[namespace]
}

func (s *Store) owns(namespace string, o *owner, epoch uint64) bool {
	return s.ownerOf(namespace) == o && o.pre.Owns(epoch)
}

// fastRun is the fast path: the warm pre-check of the namespace this store owns never saw the
// key, so no record exists and no other call of the key can reach the table before this one
// returns (other processes do not receive the namespace; this one's flights hold its calls).
// fn runs without a claim, and its result is recorded by a plain write. A plain write beside
// LWTs on one row can be lost (LWT cells carry Paxos ballot timestamps); here no LWT has touched
// the row and none can until this write is acknowledged. Under violated ownership another
// process can claim the row meanwhile: fn runs twice and the writes merge cell by cell (see
// package events' measurements). An error from fn writes nothing, permanent or not: the next
// call takes the LWT path and runs fn again.
func (s *Store) fastRun(ctx context.Context, key Key, ck string, cc *callConfig, o *owner, a bloom.Answer, fn func(context.Context) ([]byte, error)) (Result, error) {
	s.stats.fastPath.Add(1)
	value, err := fn(ctx)
	if err == nil && len(value) > s.cfg.maxResult {
		err = fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(value), s.cfg.maxResult)
	}
	if err != nil {
		s.stats.fastFailed.Add(1)
		return Result{}, err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.commitTimeout)
	defer cancel()
	var rec *Record
	if s.owns(key[0].(string), o, a.Epoch) {
		if rec, err = s.PutCompleted(wctx, key, cc.fingerprint, value, a.Epoch); err != nil {
			return Result{}, err
		}
	} else {
		s.stats.staleEpoch.Add(1)
		applied, existing, err := s.PutCompletedIfNotExists(wctx, key, cc.fingerprint, value, a.Epoch)
		if err != nil {
			return Result{}, err
		}
		if !applied {
			// The new owner stored a result first: every caller gets that one.
			s.stats.staleConflicts.Add(1)
			if existing.Final() {
				return s.replay(ck, existing)
			}
			return Result{}, &InProgressError{LeaseUntil: existing.LeaseUntil, Attempts: existing.Attempts}
		}
		rec = &Record{Status: StatusCompleted, Fingerprint: cc.fingerprint, Result: value, Attempts: 1,
			ExpiresAt: time.Now().Add(s.cfg.retention)}
	}
	if s.cache != nil {
		s.cache.put(ck, rec)
	}
	return Result{Value: value, Attempts: 1}, nil
}
