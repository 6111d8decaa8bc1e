// Package soak holds the outbox chain's soak (make soak, build tag soak): examples/outbox's
// order service, relay and consumer on a durable node and a broker of their own, under steady
// traffic for SOAK while a loop kills the relay, restarts the broker, kills the consumer,
// restarts the node (SIGTERM, and SIGKILL on its data) and injects poison events (events the
// broker refuses for good). It writes SOAK_OUT (make soak: $(OUT)/soak.json, out/ by default) and fails unless every acknowledged order
// took effect exactly once, every poison event was parked, and every table's rows stay within
// the bound its retention predicts. It is not part of make test: it takes minutes.
package soak
