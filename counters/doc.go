// Package counters makes increments of native Cassandra counters idempotent with a dedup layer,
// and states the crash window that native counters leave open.
package counters
