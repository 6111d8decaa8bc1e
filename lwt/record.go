package lwt

import (
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Status is the state of a record.
type Status string

// The record's states. A record moves STARTED → COMPLETED, FAILED or RELEASED; a RELEASED
// record, or a STARTED one whose lease has passed, is claimed again (STARTED, fence + 1).
const (
	StatusStarted   Status = "STARTED"   // claimed; the function is running under the lease
	StatusCompleted Status = "COMPLETED" // the result is stored and replayed
	StatusFailed    Status = "FAILED"    // a permanent failure is stored and replayed
	StatusReleased  Status = "RELEASED"  // a retryable failure; the next attempt runs again
)

// Record is a stored exactly-once record. Fields the node did not return are zero.
type Record struct {
	Status      Status
	Fingerprint []byte
	Owner       gocql.UUID // the claim that wrote the record
	Fence       int64      // fencing token, +1 on every new claim of the key
	LeaseUntil  time.Time
	Attempts    int    // claims made on the key
	Result      []byte // the result (COMPLETED), error message (FAILED) or last error (RELEASED)
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time // every cell of the record expires at this instant
	// Epoch is the ownership epoch of a record written by the fast path (PutCompleted), 0 for a
	// record claimed by LWT.
	Epoch int64
	// LeaseOwner is the owner of the live lease: the lease cells (LeaseOwner, LeaseUntil) carry
	// their own TTL, so Cassandra's clock ends the lease. Zero once the lease has expired.
	LeaseOwner gocql.UUID
}

// LeaseLive reports whether the record's lease is still held by its server-side lease cell. A
// record written before server-judged leases has no lease cell but a LeaseUntil kept for the
// record's whole life; its lease is judged by now, the caller's clock, as it used to be.
func (r *Record) LeaseLive(now time.Time) bool {
	if r.LeaseOwner != (gocql.UUID{}) {
		return true
	}
	return !r.LeaseUntil.IsZero() && now.Before(r.LeaseUntil)
}

// Final reports whether the record holds an answer that is replayed: COMPLETED or FAILED.
func (r *Record) Final() bool { return r.Status == StatusCompleted || r.Status == StatusFailed }

// recordFromRow decodes the columns present in row; missing or mistyped ones stay zero.
func recordFromRow(row cas.Row) *Record {
	r := &Record{}
	r.Status = Status(get[string](row, "status"))
	r.Fingerprint = get[[]byte](row, "fingerprint")
	r.Owner = get[gocql.UUID](row, "owner")
	r.Fence = get[int64](row, "fence")
	r.LeaseUntil = get[time.Time](row, "lease_until")
	r.Attempts = get[int](row, "attempts")
	r.Result = get[[]byte](row, "result")
	r.CreatedAt = get[time.Time](row, "created_at")
	r.UpdatedAt = get[time.Time](row, "updated_at")
	r.ExpiresAt = get[time.Time](row, "expires_at")
	r.Epoch = get[int64](row, "epoch")
	r.LeaseOwner = get[gocql.UUID](row, "lease_owner")
	return r
}

func get[T any](row cas.Row, col string) T {
	v, _ := row[col].(T)
	return v
}
