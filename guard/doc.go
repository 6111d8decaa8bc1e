// Package events processes each message of an at-least-once consumer once, and counts each
// increment once: call [New] and [Guard.Process] (or [Guard.ProcessBatch] for a poll) for
// every delivery, and [NewLog], [Log.Record] and [Log.Total] for counters that a retry must not
// double. Both replace what non-idempotent code does with Cassandra: the guard a consumer's
// "processed" flag, the log a native counter.
//
// # Event log
//
// Log.Record stores an increment as an event row keyed by (counter, window, part, event id).
// The window is the event's own Time truncated to the window width (WithBucketWidth, default
// 1 s) and the part a hash of its id modulo the parts (WithParts, default 4), so a retry
// rewrites the same row: recording an event any number of times counts it once, with no
// lightweight transaction on the write path. One counter's events of one window are spread over
// the parts, so a partition holds at most rate x width / parts rows (2,500 at 10k events/s with
// the defaults) and a hot counter's writes move around the ring window by window. Each writer
// records the parts it used for a window in the window index (partitioned by counter and day),
// and reads follow what is recorded, so the parts may change at any time.
//
// Record writes one partition at a time per Log: the rows recorded for a partition while its
// last write is in flight queue and go out together in its next write, one unlogged batch of
// that partition, which Cassandra applies as a single mutation. A quiet counter's event is one
// write as before; a hot one's writes carry many events each, so the node takes a hot counter
// at several times the rate of one write per event (docs/benchmarks.md). Each write also sets the
// Log's mark in the partition's writers cell (a static map: the Log's random id to the write's
// number), with write timestamps that only grow, so a write that lands after another always
// leaves a changed mark.
//
// Log.Rollup folds closed windows into one total per counter, moving a watermark with an LWT
// (UPDATE ... IF watermark = ?), so racing rollup workers, and workers that stopped between
// their steps, fold each window exactly once. Log.RunRollups does it continuously for every
// counter the Log recorded; RollupEvery for named counters. Log.Total reads the rollup row and,
// beside it, the window index from the last watermark the Log saw (a watermark never moves
// back), then the windows from that row's own watermark on, then lists the windows still written
// to again, in case a writer with other parts wrote one of them meanwhile; no event row crosses
// the network. The node sums each part of a window with its marks in the same query, and the
// Log keeps both: a window read after it settled never changes and is not read again (rollups
// in the same process reuse it too), and a window that ended but has not settled is summed again
// only for the parts whose marks changed, which one query reads for all of them. So a total of
// a hot counter sums on the node the events of the window filling now (about rate x width / 2),
// not the Lag(interval) = 4.5 s of events that RunRollups every 500 ms leaves unfolded with the
// defaults, and its cost does not grow with history; a read racing a rollup neither misses nor
// double-counts. Concurrent Total calls of one counter share reads: each joins the next read,
// which starts once the one in flight returns, so a counter read by every request of a popular
// page costs at most one read in flight and one waiting, and every call still counts every
// event acknowledged before it. make bench-hot-counter measures it (docs/benchmarks.md).
//
// Writers of releases before the writers cell do not set marks. While one of them still
// records events (a rolling upgrade), a total of a Log of this release can miss, until the
// window settles (width + grace + settle after its start), an event that writer recorded in a
// window the Log had already summed; it never counts one twice, and rollups, which read only
// settled windows afresh, fold every event.
//
// A window closes when its end plus the grace period (WithGracePeriod, default 2 s) has
// passed: an on-time write is sent only while its window is open (checked again after the
// counter's start and the window's index row, which can take long), and must be acknowledged
// within half the settle time after the window closed; an on-time write that misses either
// takes the late path below. Rollups wait the whole settle time (WithSettleTime, default 1 s),
// so every acknowledged on-time write of a window has landed before any rollup folds it, with
// the other half of the settle time left for clock skew between writers and rollups. An event id
// must always come with the same Time and Delta. A longer grace period costs a total only the
// marks of more windows, read in the same query; it does not decide whether an event counts.
//
// # Late events
//
// An event whose window closed (a consumer lagging by seconds or hours, a retry after a
// restart) is counted once, in the window open when it is recorded; Record never refuses it.
// This late path costs a few reads and one lightweight transaction, and is taken only when the
// writer's clock says the event's own window is closed; the on-time path stays one plain write.
// The steps, for an event e of window W:
//
//  1. Wait until W settled (at most the settle time, and only for an event that arrives within
//     it), then look for e's row in W, in the part of every parts value the window index lists
//     for W, and in the first layout. Found: e was recorded on time, and this is a duplicate.
//     Nothing is written.
//  2. Else claim e in counter_late_claims (INSERT ... IF NOT EXISTS, partition (counter, W, id))
//     naming T, the window open now. A claim already there names the window every writer uses.
//  3. If the claimed window T is open, write e's row in T (an on-time write there, so a retry
//     rewrites the same row). If T closed, wait until it settled and look for e's row in T:
//     found, done; missing (the claim's writer stopped between the claim and the write), move
//     the claim to the window open now with UPDATE ... IF target = T and go back to 3 with
//     whatever window the claim names afterwards.
//
// Why each event counts once. Event rows are never deleted (folding reads them, the rollup row
// holds a sum), so a row found in W or T is a witness for as long as a retry can come. A row is
// written into a window only while it is open by the writer's clock, so once that window
// settled by anyone's clock, every write to it has landed (the settle rule rollups rely on):
// step 1 sees any on-time row of e, and the check of step 3 sees any row written into T by a
// writer that followed the claim. Without a row in W, every late writer agrees on one claim
// (the insert is an LWT), writes only into the window the claim names, and moves the claim only
// from a window that settled without the row, so at most one window ever holds e's row: a claim
// moves at most once per settled window, and a move is conditional on the window read, so two
// writers racing to move it agree on the winner's window. A late row lands in an open window,
// so rollups fold it like any other and a total read at any time counts it once. The argument
// rests on what the rollups rest on: clock skew stays under half the settle time, and a write
// the writer stopped waiting for at its deadline is applied, if at all, before the window
// settled. Cassandra does not let a client bound that last delay (a node may still apply a
// mutation it queued up to its write_request_timeout, 2 s by default, after receiving it), so
// a Log whose nodes queue writes for seconds should use a settle time above twice that
// timeout; every total then reads that much more of a hot counter's guard. Step 1 also looks for e in the first layout (counter_events, the bucket of its
// time), so a retry of an event an earlier release recorded counts nothing more once that
// write landed; a retry made while an earlier release's writer still has the same event's
// write in flight (a rolling upgrade) is not covered.
//
// Counters written by an earlier release (counter_events, hour buckets) keep their totals:
// totals still read those buckets and rollups fold them once they are closed by that release's
// rules (an hour of grace and five minutes of settle time).
//
// # Consumer guard
//
// Guard.Process claims a message in processed_messages (an LWT with a lease, through package
// lwt), runs the handler, and marks the message processed only if the handler succeeded; a
// failure releases the claim so a redelivery runs the handler again. Concurrent deliveries of
// one message run the handler once: the others get Duplicate, or InProgress while the first
// runs. After WithMaxAttempts handler runs the message is reported as Poison, for the caller
// to dead-letter. Records live for the retention window (WithRetention, default 7 days).
// Every message is its own partition; ProcessedIDs walks the by-scope index.
//
// # Layouts
//
// The bucketed table (by message time) and the by-scope index (by indexing time) split a broker
// partition's messages into windows (WithBatchWindow, default 1 min) and buckets of a hash of the
// id (WithBatchBuckets, default 8): a partition holds rate x window / buckets rows, 75,000 at
// 10k messages/s, and New refuses settings that would pass MaxPartitionRows at the declared
// rate (WithPartitionRate, ErrUnboundedPartition). Since a message is found only where its
// layout put it, each consumer group's layouts are recorded in guard_layouts with the message
// time they apply from, and every lookup follows the layout of the message's time. A guard
// configured differently records its layout from a window boundary LayoutSwitchDelay ahead, and
// guards reread the layouts before they look up a time their last read cannot vouch for, so a
// change never moves a time already written. A group first seen by this release keeps the
// earlier release's layout (1 min, 1 bucket; WithLegacyBatchLayout) for the times up to about three
// minutes ahead, so its earlier records are still found; the hour-bucketed index of earlier
// releases is still read by warm-ups and ProcessedIDs until its rows expire. ProcessBatch refuses
// a message whose time is more than lwt.MaxClockSkew ahead of the clock (ErrFutureMessage).
//
// A handler may set cells of the message's record that are written by the same conditional
// update that marks it processed (WithCompletionColumns): package outbox stages the events of
// a saga step that way, committed with the message or not at all. Such a guard has no fast
// path, and ProcessBatch's records carry no such cells.
//
// # Batched claims
//
// Guard.ProcessBatch takes the messages of one poll. Those that share a partition of
// processed_messages_bucketed — the scope, a window of the message's own Time and a bucket of its
// id, in the group's layout (default 1 min and 8 buckets) — are claimed with one
// conditional batch, which Cassandra applies in one Paxos round, and their successes and
// failures are recorded with one more: two LWTs per group of up to lwt.MaxBatchRows (100)
// messages instead of about two per message. A rejected claim batch returns the rows that
// blocked it; each message is settled from its row as Process would settle it (duplicate, in
// progress, key reuse, poison, released or expired: claimed again) and the rest are claimed in
// the next round. Leases are cells with their own TTL, so Cassandra's clock decides when one
// has passed. The partition derives from the scope, Time and ID alone, so a redelivery and a
// producer duplicate (the same id and time at another offset) always meet the same row; a
// partition holds at most rate x window / buckets rows (see Layouts). Measured on one local node with
// lwtbench's guard-batch operation (polls of 100, one run): 43 times the messages per second of
// Process at one worker and 49 times at sixteen, and 16 and 15 times one plain INSERT per
// message (docs/benchmarks.md has the batch sizes from 10 to 400).
//
// # The fast path, and when it is safe
//
// By default every message takes the LWT path. Guard.Own(ctx, scope, epoch, pre) turns lwt's fast
// path on for one scope: it warms pre (a *bloom.PreCheck) from the ids written within its
// horizon, and from then on a message that pre answers "clearly new" runs its handler without a
// claim and, on success, is recorded with one plain write. "Maybe seen" and "not warm" answers
// take the LWT path; a false positive costs one LWT, never correctness. A redelivery that
// arrives while this guard is still processing the id gets InProgress at once. A fast-path
// handler failure writes nothing: the redelivery takes the LWT path. Guard.Disown(scope) turns
// it off; a fast-path handler that returns after ownership moved records the message with a
// conditional write instead, so it cannot overwrite a new owner's record. ProcessBatch takes
// the same fast path: the clearly-new messages of a poll are recorded with one unlogged batch
// per partition of processed_messages_bucketed (one mutation, no Paxos round), the others go
// through the conditional batches.
//
// The horizon. A pre-check remembers ids for its horizon (bloom.WithRetention, default 1 h),
// not for the records' retention (7 days), so its memory is rate x horizon and a warm-up reads
// only the horizon. It vouches for a message only while the message's own Time is within the
// horizon less lwt.MaxClockSkew: a message first processed at T had a Time of at least T less
// the skew, so its id, admitted at T or loaded by a warm-up since, is still remembered. Older
// messages, and messages without a Time (unless the horizon covers the whole retention plus
// the commit timeout), take the LWT path, which finds every record. No setting can make the
// filter forget an id whose record still exists and still be asked about it; Own refuses a
// horizon too short to vouch for anything.
//
// One write, and the invariant it keeps: if a record exists, a new owner's warm-up sees its
// id. A message with a Time is recorded on the fast path in its partition of
// processed_messages_bucketed, which derives from the scope, the message's Time and a hash of
// its id: the record is its own index, since a warm-up reads every partition of the horizon's
// windows. The steps are: admitted by the pre-check (nothing written), handler run, record
// written (one write), answered. A process that stops before the write leaves no record, and a
// new owner runs the message (as the LWT path does once the lease of a handler that stopped
// has passed); a process that stops after it leaves a record that the next warm-up loads and
// that the LWT path finds, so the id never runs again (TestFastPathStoppedBetweenSteps...). The
// LWT path of Process consults the bucketed row of a message with a Time after its claim and
// before its handler, one read more than before, so a record written by the fast path or by
// ProcessBatch answers every later delivery, whichever path it takes. Messages without a Time
// keep the earlier shape: their by-scope index row is written and awaited before the handler,
// then the record (two writes). Records written before this release keep working: the LWT
// path reads processed_messages as before, and warm-ups read the by-scope index (its windows
// and the hour buckets of earlier releases) too.
//
// The fast path is exact only while ownership holds: every delivery of the scope's messages
// reaches this guard (one consumer per partition), Own is called on assignment with an epoch
// that grows on every assignment (the group generation), and Disown is called on revocation
// before another consumer can receive the partition. If two processes own one scope at once, a
// message delivered to both is processed by both: in TestFastPathOwnershipViolatedDuplicates,
// 100% of the messages delivered to two fast-path owners ran twice, as did 100% of those
// redelivered to the second after the first finished; with one fast-path owner and one strict
// consumer, 71.0% ran twice in the last recorded run (it depends on timing) and the strict consumer saw its lease lost on some of them. With the
// default settings the same test shows no duplicate and no fast path. A fast-path handler has
// no lease and no fencing token, and its failed run is not counted against WithMaxAttempts.
//
// # Operating
//
// Guard.Inspect, ReleaseMessage, DeleteMessage, ScanStuck and ListMessages give a service in
// code what the cassdedup command's message subcommands do, with the rules of package lwt's
// Store.Inspect, ReleaseKey, Delete and ScanStuck.
//
// # Concurrency
//
// Log and Guard are safe for concurrent use by many goroutines and processes. Neither starts
// goroutines that outlive a call, except the lease renewal that package lwt runs while a
// handler runs, a Log's writer of a partition's queue, which ends when the queue is empty
// (within the window's grace and settle time at the latest), and a Log's reader of a counter's
// totals, which ends when no call waits for another read; RunRollups and RollupEvery run in
// their caller's goroutine (and goroutines of their own that end with each pass) until its ctx
// ends.
package guard
