// Package events replaces non-idempotent counters with an event log and guards at-least-once
// message consumers so that each message is processed once.
package events
