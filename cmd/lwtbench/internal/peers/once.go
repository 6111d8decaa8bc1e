package peers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// Errors of the exactly-once designs, for errors.Is: the designs over other stores fail with
// the executor's own errors (lwt's), so one outcome is one error whichever store ran it.
var (
	// ErrInProgress: another attempt holds the key's claim and its lease has not expired.
	ErrInProgress = lwt.ErrInProgress
	// ErrKeyReuse: the key was first used for another request (another fingerprint).
	ErrKeyReuse = lwt.ErrKeyReuse
	// ErrLeaseLost: the run's claim expired and was taken over before its result was stored.
	ErrLeaseLost = lwt.ErrLeaseLost
	// ErrInvalid: a bad argument (an empty key, a fingerprint of the wrong size).
	ErrInvalid = errors.New("peers: invalid argument")
)

// Result is what an exactly-once call returns: the run's result, or the stored one when Replay.
type Result struct {
	Value  []byte
	Replay bool
}

// FingerprintSize is the size of a request fingerprint (a SHA-256).
const FingerprintSize = 32

// Durations of the designs: a claim's lease (how long a crashed run blocks its key before a
// retry may take over) and a record's retention, the values cassdedup's executor uses.
const (
	DefaultLease     = 30 * time.Second
	DefaultRetention = 24 * time.Hour
)

// Server describes the server a design ran against, for the benchmark's rows.
type Server struct {
	Store       string `json:"store"`       // "postgres", "redis"
	Version     string `json:"version"`     // the server's own
	Durability  string `json:"durability"`  // when an acknowledged write is on disk
	Replication string `json:"replication"` // nodes and copies
}

func validate(key string, fp []byte) error {
	switch {
	case key == "":
		return errors.Join(ErrInvalid, errors.New("empty key"))
	case len(key) > 512:
		return errors.Join(ErrInvalid, errors.New("key longer than 512 bytes"))
	case len(fp) != FingerprintSize:
		return errors.Join(ErrInvalid, errors.New("fingerprint is not 32 bytes"))
	}
	return nil
}

// newToken returns a random claim token: the owner's proof when it stores its result.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
