// Package cqlsession builds the gocql cluster configuration that services using this module
// should start from: call [NewCluster](hosts, opts...), set your keyspace, authentication or TLS
// on the result, and call its CreateSession. It is the driver tuned for the short, conditional
// requests the stores send, with nothing in it that could re-send a lightweight transaction.
//
// gocql's own defaults cost latency and, across datacentres, safety:
//
//   - Write coalescing waits up to 200 µs after each write to batch frames. At the request
//     rates of a service that waits for every answer, the wait is paid on every request (about
//     1 ms per request on a development node); NewCluster turns it off.
//   - Round-robin routing sends a request to any node, which then forwards it to a replica.
//     NewCluster routes token-aware (to a replica of the partition first), over DC-aware
//     round-robin when a local datacentre is named.
//   - A LOCAL_SERIAL Paxos round coordinated in another datacentre serialises with that
//     datacentre only. NewCluster therefore refuses local consistencies without a local
//     datacentre, and with them connects to the local datacentre's nodes only.
//   - Driver-level retries re-send every failed request, a conditional write whose outcome is
//     unknown included. NewCluster sets no retry policy and leaves queries non-idempotent, so
//     the driver never retries or speculatively re-sends a write; the stores resolve unknown
//     outcomes themselves with a serial read.
//
// The configuration NewCluster returns is a plain *gocql.ClusterConfig: set authentication, TLS,
// a keyspace or a logger on it before calling CreateSession. It serves one session: gocql's
// token-aware policy cannot be shared between sessions (CreateSession panics on a second one),
// so call NewCluster again for another. NewCluster is safe for concurrent use; the
// configuration it returns belongs to the caller.
package cqlsession
