// Package bloom is the pre-check that lets a process skip the lightweight transaction (LWT) for
// operations it knows to be new: build one per ownership scope with [NewPreCheck] and hand it to
// lwt.Store.Own or guard.Guard.Own, which warm it from the table and consult it. Under it is a
// concurrency-safe, time-rotating Bloom filter ([New], [NewRotating]).
//
//	pre, err := bloom.NewPreCheck("orders-group/orders/17", bloom.WithExpectedItems(rate*3600))
//	err = guard.Own(ctx, scope, generation, pre) // warms it, then consults it
//
// Filter is a Bloom filter sharded over independently locked bits-and-blooms filters. Rotating
// adds generations so that keys age out with the table's TTL. PreCheck wraps a Rotating filter
// for one ownership scope and adds the states (cold, warming, warm), the ownership epoch, the
// warm-up from a KeySource and the stats. A bad option makes the constructor fail with an error
// that names it and matches the option's sentinel (ErrInvalidItems, ErrInvalidShards, ...).
//
// # Concurrency
//
// Every method of every type is safe for concurrent use. Filters take one shard's lock per
// call, chosen by the key's hash, so calls on different keys rarely wait for each other.
// TestOrAdd and PreCheck.Check are atomic per key: of several goroutines racing on the same key,
// exactly one is told it is new. No type starts a goroutine: rotation happens on the next call
// after a window ends, driven by the clock given with WithClock. KeySource callbacks run on the
// goroutine that called WarmUp, outside any lock.
//
// # When the fast path is safe
//
// A filter that says "never seen" knows only the keys this process has seen. Skipping the LWT
// on that answer is exact only when all of these hold:
//
//   - every attempt of a key reaches this process: a consumer that owns the key's partition, a
//     sticky router that owns the key's namespace — the PreCheck's scope;
//   - the PreCheck was warmed, for the current ownership epoch, from every key of that scope
//     written within its horizon, and Invalidate is called as soon as ownership is lost or in doubt;
//   - the filter is asked only about keys it can vouch for: WithRetention is the horizon (default
//     1 h), and the stores that use a PreCheck (lwt.Store.Own) send an operation older than the
//     horizon, by its own time, and one without a time unless the horizon covers the table's
//     TTL, to the LWT path, so a forgotten key is never answered "clearly new";
//   - the fast-path write carries Answer.Epoch, so that a write from an owner that has lost the
//     scope without knowing it can be detected.
//
// When two processes own one scope at once, a key delivered to both runs in both: the measured
// duplicate rates are in docs/fastpath.md ("When it is not exact"), with the design and the
// costs. The fast path is off unless a caller turns it on. A "maybe seen" answer always takes
// the LWT path, so a false positive costs one LWT, never correctness, and a cold or warming
// PreCheck answers NotWarm to everything.
package bloom
