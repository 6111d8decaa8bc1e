// Package clock measures how far a component's clock is from its Cassandra cluster's: a
// [Meter] asks a coordinator for its time (SELECT currentTimestamp() FROM system.local, a local
// read of one row) and takes half the round trip as the error bound. Buckets, windows and
// horizons that stagers, relays and consumers judge each by its own clock agree only while
// those clocks agree; a component that measures its offset can correct by it (judge time by
// the cluster's clock, Meter.Now) or refuse while the offset is not known well enough
// (Meter.Check returns an *OffsetError, errors.Is ErrOffset), instead of losing data silently
// to a host whose clock is minutes off.
//
//	m, _ := clock.New(session, clock.WithClock(now), clock.WithLogger(logger))
//	r, err := m.Check(ctx, time.Second) // measures when the last reading is a minute old
//	if err != nil {
//		return err // the offset is not known within a second: refuse, commit nothing
//	}
//	at := m.Now() // the cluster's time, for a bucket every component agrees on
//	_ = r.Offset  // the cluster's clock minus the component's (now)
//
// A reading is extrapolated between measurements by Go's monotonic clock, not by the
// component's, so a step of the component's clock (NTP, an operator, a VM resumed with a stale
// clock) does not move Meter.Now: it shows in Reading.Offset at once, widens Reading.Bound by
// how far the two clocks moved apart, and makes the next Check measure again. The monotonic
// clock's own drift is allowed for at MaxDrift. The offset is measured against the clock the
// component was given (WithClock): a test that skews a component through its clock option sees
// the skew measured.
//
// A Meter starts no goroutine: it measures on use, when a Check finds the last reading older
// than the interval (WithInterval, a minute), missing, or its clocks moved apart; one caller
// measures while the others go on with the reading they have, if it is still good enough. It
// logs (WithLogger) when the offset moves by more than the threshold (WithThreshold), a failed
// measurement and a refusal. Every method is safe for concurrent use.
//
// Package outbox uses it for its stagers and relays (docs/outbox.md, "Time"); the other
// packages take it the same way, as they take lwt/cas, without importing lwt's state machine.
package clock
