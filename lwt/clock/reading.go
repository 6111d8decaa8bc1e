package clock

import "time"

// Reading is what a Meter knows of its component's clock: the offset from the cluster's clock
// with its bound, extrapolated to the moment it was taken, and the meter's counts.
type Reading struct {
	// Offset is the cluster's clock minus the component's: add it to the component's time to
	// get the cluster's. A component 150 s behind the cluster reads +150s.
	Offset time.Duration
	// Bound is how far the true offset may be from Offset: half the last measurement's round
	// trip, the coordinator's millisecond, MaxDrift of its age, and how far the component's
	// clock moved apart from the monotonic clock since (a step, a suspended VM).
	Bound time.Duration
	// Age is the age of the measurement the reading is carried from, by the monotonic clock: the
	// last successful one, or an earlier one whose bound is still tighter than a later slow
	// round trip's.
	Age time.Duration
	// Measured is false until a measurement succeeds; Offset and Bound mean nothing before.
	Measured bool
	// Measurements and Failures count the queries made and the ones that failed; Refusals the
	// Checks that returned ErrOffset.
	Measurements, Failures, Refusals int64
	// Err is the last measurement's error, nil once one succeeds after it.
	Err error
}

// sample is one successful measurement.
type sample struct {
	cluster time.Time     // the coordinator's time at the middle of the round trip
	local   time.Time     // the component's clock then
	mono    time.Time     // time.Now() then: its monotonic reading extrapolates the sample
	base    time.Duration // the bound at the time of the measurement
}

// resolution is the coordinator's: currentTimestamp() is in whole milliseconds, truncated.
const resolution = time.Millisecond

// newSample makes the sample of a query sent at (l0, m0) by the component's and the monotonic
// clock, answered at (l1, m1) with the coordinator's time at.
func newSample(at, l0, m0, l1, m1 time.Time) sample {
	rtt := m1.Sub(m0)
	return sample{
		cluster: at.Add(resolution / 2), // the middle of the millisecond it names
		local:   l0.Add(l1.Sub(l0) / 2),
		mono:    m0.Add(rtt / 2),
		base:    rtt/2 + resolution/2,
	}
}

// at extrapolates s to the monotonic instant mono, when the component's clock reads local: the
// cluster's time then, and the reading's offset, bound and age.
func (s sample) at(mono, local time.Time) (cluster time.Time, offset, bound, age time.Duration) {
	age = max(mono.Sub(s.mono), 0)
	cluster = s.cluster.Add(age)
	slip := local.Sub(s.local) - age
	if slip < 0 {
		slip = -slip
	}
	return cluster, cluster.Sub(local), s.base + time.Duration(float64(age)*MaxDrift) + slip, age
}
