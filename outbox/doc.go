// Package outbox is a transactional outbox on Cassandra: call [Outbox.Stage] (an [Outbox] comes
// from [New]) inside a run, and run a relay ([NewRelay], [Relay.Run]) that publishes what
// committed. Events staged by an operation that runs under lwt.Store.ExecuteOnce (or an httpidem
// handler, or a handler of guard.Guard.Process) are committed in the same conditional write that
// completes the operation, or not at all, and the relay publishes the committed ones to a broker
// at least once, each with a stable id that the consumer dedups on.
//
//	store, _ := lwt.NewStore(session, outbox.Table("cassdedup"))
//	box, _ := outbox.New(session)
//	store.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
//		// ... the business write ...
//		if err := box.Stage(ctx, outbox.Event{Type: "order.placed", Key: orderID, Payload: body}); err != nil {
//			return nil, err
//		}
//		return result, nil
//	})
//
//	relay, _ := outbox.NewRelay(session, publisher) // kafka/kafkapub, or any Publisher
//	go relay.Run(ctx, nil)
//
// What holds, in short (the argument for each is in docs/outbox.md, "Why it holds"):
//   - a run that is released, fails permanently or loses its lease publishes nothing; a replay
//     stages nothing new; the events of a committed run expire with its record, and the relay
//     keeps a copy until they are published or parked (see Limits);
//   - every committed event is published, at least once, while a relay runs; stagers and relays
//     judge buckets by the cluster's clock, each measuring its own clock's offset from a
//     coordinator's (lwt/clock) and refusing while it is not known within an eighth of the horizon
//     (ErrClockOffset; Outbox.Clock, Relay.Clock); a Stage whose intent write took longer than
//     half the horizon fails (ErrIntentLate);
//   - every publication of an event carries the id EventID(namespace, key, sequence); the events
//     of one operation are published together, in staging order; across operations there is no
//     order, unless WithKeyOrder: then the events of one key are first published in the order
//     their operations staged, each once every earlier one of its key is published, dropped or
//     parked (docs/outbox.md, "Ordering");
//   - a relay frozen past its shard's lease cannot mark in that shard once a successor worked it
//     (ErrFenced); each Publish ends within WithPublishTimeout, inside the lease;
//   - a pass reads only the intents' arrivals staged since the last one (WithArrivalLag ago at
//     least), and each bucket's intents once when its horizon has passed: about two rows per
//     intent whatever the rate. An intent whose arrival comes later than the lag is published by
//     that last read, up to a bucket and a horizon after its staging.
//
// A consumer's handler stages events the same way on a guard built with
// guard.WithCompletionColumns(ColumnName); ProcessBatch and the guard's fast path cannot carry
// them (docs/outbox.md, "Staging from a consumer's handler").
//
// A run of lwt.WithRepeatableFunction (httpidem.WithRepeatableHandler) stages the same way, and
// its events ride on its one insert; racing runs all stage, the relay publishes the committed
// run's events and drops the others' intents. Such a run has no record until it commits, so the
// relay keeps an intent without a record waiting until two horizons and ten seconds after its
// staging, then drops it; Stage refuses a run whose store's lease exceeds the horizon
// (ErrIntentLate). docs/outbox.md, "One Paxos round per order".
//
// The tables are in the keyspace of WithKeyspace and named by WithTables and WithRecordsTable;
// the shard count, bucket width and horizon lay them out, so every stager, relay and Admin of one
// outbox must use the same ones: the first stores them in outbox_layout, the others check them
// (ErrLayoutMismatch). Those shared settings are of type Option, which New, NewRelay and
// NewAdmin all accept; a relay's own settings (RelayOnlyOption: WithPollInterval, WithRelayLease,
// ...), the relay group's name (GroupOption, for NewRelay and NewAdmin) and the stager's
// WithMaxSize (StagerOnlyOption) do not compile with a constructor that would ignore them. A bad
// option makes the constructor fail with an error that names it and matches ErrInvalidOption.
//
// # Limits
//
// The record must be an operation's in the outbox's records table (namespace and key strings,
// as httpidem and ExecuteOnce write them; a namespace starting with NUL is reserved for
// messages) or a message of a consumer guard's table, in the outbox's keyspace: a relay reads no
// other, so Stage refuses them (ErrUnsupportedKey). lwt's fast path has no conditional write to
// ride on, so Stage there is ErrNoRun. Admin.Replay replays operations' events, not messages'.
// Nothing committed is dropped silently: an intent lives a grace (WithPendingGrace, 7 days) past
// its record, with a copy of its events, and one whose record expired unsettled is parked
// (ErrCommitUnknown); events whose publication keeps failing are parked after WithMaxAttempts
// (Admin.ListParked, Unpark, Discard; cassdedup outbox parked).
//
// # Concurrency
//
// Outbox and Relay are safe for concurrent use. Neither starts a goroutine of its own: Relay.Run
// blocks its caller until ctx ends, and a pass reads records with a few goroutines that end
// before it returns.
//
// The design, the tables' sizes, the crash tests and the costs: docs/outbox.md.
package outbox
