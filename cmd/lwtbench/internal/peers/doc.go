// Package peers holds the exactly-once designs of the stores people pick instead of Cassandra,
// written as their own experts write them, so the benchmark (internal/bench) can measure them
// beside cassdedup on the same machine in the same run:
//
//   - Postgres (pgx, a pool, statements prepared on every connection): a plain insert; an
//     idempotency_keys table claimed with INSERT ... ON CONFLICT DO NOTHING, a locked_at column
//     that is the claim's lease and fence, and a recovery point (started → finished) that a
//     retry reads; the outbox's producer side (the business row and the outbox row in one
//     transaction).
//   - Redis (go-redis): a plain SET; a claim with SET NX PX ... GET (one round trip answers a
//     new key and a duplicate alike), the result stored by a script fenced on the claim's token.
//
// The package knows nothing of the benchmark: each design is a small type with the operations a
// service would call, tested for correctness against a real server (a duplicate replays, a new
// key runs once under 32 goroutines).
package peers
