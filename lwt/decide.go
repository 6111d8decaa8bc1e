package lwt

import "bytes"

// decision is what a claim attempt does with the record it found.
type decision int

const (
	decideInsert     decision = iota + 1 // no live record: claim with INSERT ... IF NOT EXISTS
	decideReplay                         // a final record: replay it
	decideKeyReuse                       // another request's record: ErrKeyReuse
	decideInProgress                     // a live claim of another attempt: ErrInProgress
	decideTakeover                       // RELEASED, or STARTED with its lease gone: claim it again
)

// decide is the state machine's answer to a record found by a claim (nil: none), for a request
// with fingerprint fp. leaseLive says whether the record's lease still holds, however the
// store judges it.
func decide(cur *Record, fp []byte, leaseLive bool) decision {
	switch {
	case cur == nil:
		return decideInsert
	case !bytes.Equal(cur.Fingerprint, fp):
		return decideKeyReuse
	case cur.Final():
		return decideReplay
	case cur.Status == StatusStarted && leaseLive:
		return decideInProgress
	}
	return decideTakeover
}
