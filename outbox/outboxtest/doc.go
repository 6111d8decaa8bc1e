// Package outboxtest is the conformance suite that every outbox.Publisher must pass, as
// Watermill's pub/sub test suite is for its adapters. An adapter's own test calls TestPublisher
// with a Factory that makes a fresh destination (a topic, a queue) per sub-test:
//
//	func TestConformance(t *testing.T) {
//		outboxtest.TestPublisher(t, func(t *testing.T) outboxtest.Setup {
//			topic := newTopic(t)
//			return outboxtest.Setup{Publisher: newPublisher(t, topic), Receive: reader(t, topic),
//				Refused: publisherToMissingTopic(t), Stalled: publisherToSilentBroker(t)}
//		})
//	}
//
// The sub-tests check what the relay relies on: the events of one operation and key arrive in
// staging order, also across Publish calls and in a full publish batch; ids, types, sequences,
// keys, headers and payloads arrive byte for byte (non-UTF-8 header values and binary payloads
// included); a republication arrives again with the same ids; a refused publication returns an
// error; an expired, cancelled or ending context ends a Publish promptly with the context's
// error (the relay bounds each publication by its lease); runs up to the outbox's size limit
// and publishers shared by several relays work. docs/outbox.md ("Adding a publisher") says how
// to write the Factory.
package outboxtest
