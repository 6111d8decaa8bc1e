package lwt

import (
	"context"
	"time"
)

// DeadlineContext returns a context for a fast-path record's write: it keeps ctx's values but not
// its cancellation (the operation ran; its record is written even if the caller gave up) and
// ends at deadline, the lease's (Pass.Hold). Its Err looks at the clock too: after a pause of
// the process (a stop, a long GC) the context's timer fires a moment after the process resumes,
// and a driver resumed first, which looks at Err before it sends the request, would send the
// write after the deadline meanwhile.
func DeadlineContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	c, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	return clocked{Context: c, deadline: deadline}, cancel
}

// clocked is a context whose Err reports its deadline as soon as the clock passed it.
type clocked struct {
	context.Context
	deadline time.Time
}

func (c clocked) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}
