// Package events counts each increment once, whatever the retries, with an event log that
// replaces a native Cassandra counter; a Log is safe for concurrent use by many goroutines and
// processes. Build one with [NewLog], store increments with [Log.Record] (or a poll's with
// [Log.RecordBatch]), run [Log.RunRollups] in a goroutine you own, and read a counter with
// [Log.Total].
//
//	log, err := events.NewLog(session)
//	if err != nil {
//		return err
//	}
//	go log.RunRollups(ctx, 500*time.Millisecond, nil) // folds closed windows until ctx ends
//	// The request id names the increment and its arrival time picks its window on every retry.
//	err = log.Record(ctx, events.Event{Counter: "views:home", ID: requestID, Delta: 1, Time: arrived})
//	total, err := log.Total(ctx, "views:home")
//
// An [Event] is a row named by its counter, its window (its own Time truncated to the width of
// the counter's windows at that time), a part (a hash of its ID) and its ID, so recording it
// again rewrites the same row: the on-time path is one plain write, with no lightweight
// transaction. A counter's windows widen while it is cold and narrow while it is hot
// ([WithWindowWidths]); the widths are stored in its rollup row, each ahead of the clock, so
// the window of an event time never changes once a writer can use it. An event id must always
// come with the same Time and Delta. Rollups fold each closed window into the counter's total
// exactly once, and Total reads that total plus what is not folded yet, summed on the node.
//
// An event recorded after its window closed (a consumer catching up, a retry after a restart)
// is counted once, in the window open then, through a claim in counter_late_slices that names
// that window. [Log.RecordBatch] stores a poll's events at once: its late events of one counter
// and one second of event time are looked up in their own window (one read per part) and
// claimed with one conditional batch (a Paxos round per 100 events, not one per event), and the
// rows of on-time and late events go out together; [Log.Record] is the same path for one event.
// It stays exact because batching changes how many claims one Paxos round decides, not what a
// claim means: event rows live as long as a retry is accepted and a window takes writes only while it is open,
// so once it settled a row found there is a witness; each late event has one claim row, at a
// key derived from the event alone, written only by conditional writes, which a conditional
// batch applies all or none; writers write an event's row only into the window its claim
// names, and move a claim only from a window that settled without the row. So at most one
// window ever holds a late event's row, whatever the retries, batch boundaries, crashes between
// the claim and the write, or racing consumers.
//
// The log forgets on purpose: its rows live for the retention ([WithLogRetention], default 7
// days) and a retry older than it is refused with [ErrEventExpired]; the folded total never
// expires, and a rollup that falls toward the retention is reported ([ErrRollupStalled],
// [LogStats].RollupLag). A total outside the int64 range fails with [ErrOverflow].
//
// Options are typed to [NewLog]: each validates its value, and a bad one fails NewLog with an
// error that names it and wraps [ErrInvalidOption]. The consumer guard that used to live here is
// package guard.
//
// The design is in the repository's docs: docs/eventlog.md (writes, rollups, totals, late
// events, why each event counts once, and the retention), docs/sizing.md (what a partition holds and what a
// total reads) and docs/benchmarks.md (one hot counter, measured).
package events
