package events

import "context"

// totalRead is one read of a counter's total, shared by the Total calls that joined it before
// it started.
type totalRead struct {
	done  chan struct{} // closed when total and err are set
	total int64
	err   error
}

// joinTotal returns the next read of counter, which has not started: a read that is in flight
// may have begun before the caller's last Record returned, so it joins the one after. The first
// caller of a counter with no read in flight starts the goroutine that makes them.
func (l *Log) joinTotal(counter string) *totalRead {
	l.mu.Lock()
	defer l.mu.Unlock()
	next, reading := l.totals[counter]
	if next == nil {
		next = &totalRead{done: make(chan struct{})}
		l.totals[counter] = next
	}
	if !reading {
		go l.readTotals(counter)
	}
	return next
}

// readTotals makes counter's reads one after another, each for the calls that joined it, until
// none is waiting. A read is not bound to any caller's context: callers that stop waiting leave
// it to the others; the driver's timeouts bound it. A read that summed more than a few closed
// windows folds them once its callers have their total, before the next read starts.
func (l *Log) readTotals(counter string) {
	for {
		l.mu.Lock()
		r := l.totals[counter]
		if r == nil {
			delete(l.totals, counter)
			l.mu.Unlock()
			return
		}
		l.totals[counter] = nil // reading: later callers make the next one
		l.mu.Unlock()
		var fold *pendingFold
		r.total, fold, r.err = l.readTotal(context.Background(), counter)
		close(r.done)
		if fold != nil {
			l.applyFold(context.Background(), counter, fold)
		}
	}
}
