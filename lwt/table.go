package lwt

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"

	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt/observe"
	"github.com/cassdedup/cassdedup/schema"
)

// Table describes a table that holds exactly-once records: the record columns of
// schema/cql/001_idempotency_keys.cql (fingerprint, status, owner, fence, lease_until, attempts,
// result, created_at, updated_at, expires_at, epoch, and lease_owner from
// schema/cql/005_server_leases.cql) under a partition key of KeyColumns, in order.
// Names come from configuration, so they are validated as CQL identifiers and quoted.
type Table struct {
	Keyspace   string
	Name       string
	KeyColumns []string // the partition-key columns; a Key binds one value to each, in order
	// CompletionColumns are optional columns that a run may set through its Completion: they
	// are written only by the conditional update that completes a claim, and set to null by
	// every new claim of the key, like the result. None by default.
	CompletionColumns []string
}

// IdempotencyKeys is the table idempotency_keys in keyspace, keyed by (namespace, key).
func IdempotencyKeys(keyspace string) Table {
	return Table{Keyspace: keyspace, Name: "idempotency_keys", KeyColumns: []string{"namespace", "key"}}
}

// Key is the partition-key values of one record, bound in the order of Table.KeyColumns.
// Supported types are string (non-empty, valid UTF-8, at most the store's key length limit) and
// int, int32 and int64. It is observe.Key, the key an Observation names.
type Key = observe.Key

// IdempotencyKey is the key of a record in idempotency_keys: a namespace that scopes tenants
// and operation types (derive it from the caller's identity, never from the request) and the
// client's idempotency key.
func IdempotencyKey(namespace, key string) Key { return Key{namespace, key} }

// KeyError describes an invalid key value. It matches ErrInvalidKey.
type KeyError struct {
	Column string // the key column, e.g. "namespace"
	Reason string
}

// Error describes the error.
func (e *KeyError) Error() string { return fmt.Sprintf("lwt: invalid key: %s: %s", e.Column, e.Reason) }

// Unwrap returns ErrInvalidKey.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// recordColumns are the columns every record table has besides its key.
var recordColumns = []string{"fingerprint", "status", "owner", "fence", "lease_until", "attempts", "result", "created_at", "updated_at", "expires_at", "epoch", "lease_owner"}

// validate checks the descriptor and returns the quoted table name and key columns.
func (t Table) validate() (qualified string, keyCols []string, err error) {
	qualified, err = schema.QualifiedName(t.Keyspace, t.Name)
	if err != nil {
		return "", nil, fmt.Errorf("lwt: table: %w", err)
	}
	if len(t.KeyColumns) == 0 {
		return "", nil, fmt.Errorf("lwt: table %s: no key columns", qualified)
	}
	seen := map[string]bool{}
	for _, c := range recordColumns {
		seen[c] = true
	}
	for _, c := range t.KeyColumns {
		q, err := schema.QuoteIdentifier(c)
		if err != nil {
			return "", nil, fmt.Errorf("lwt: table %s: key column: %w", qualified, err)
		}
		if seen[c] {
			return "", nil, fmt.Errorf("lwt: table %s: key column %q repeated or a record column", qualified, c)
		}
		seen[c] = true
		keyCols = append(keyCols, q)
	}
	return qualified, keyCols, nil
}

// completionColumns validates the completion columns against the key and record columns and
// returns them quoted, by name.
func (t Table) completionColumns() (map[string]string, error) {
	taken := map[string]bool{}
	for _, c := range append(append([]string{}, recordColumns...), t.KeyColumns...) {
		taken[c] = true
	}
	out := map[string]string{}
	for _, c := range t.CompletionColumns {
		q, err := schema.QuoteIdentifier(c)
		if err != nil {
			return nil, fmt.Errorf("lwt: table %s: completion column: %w", t.Name, err)
		}
		if taken[c] {
			return nil, fmt.Errorf("lwt: table %s: completion column %q repeated, a key or a record column", t.Name, c)
		}
		taken[c] = true
		out[c] = q
	}
	return out, nil
}

// validateKey checks k against the table's key columns and the length limit in bytes.
func validateKey(cols []string, k Key, maxLen int) error {
	if len(k) != len(cols) {
		return &KeyError{Column: strings.Join(cols, ","), Reason: fmt.Sprintf("%d values for %d key columns", len(k), len(cols))}
	}
	for i, v := range k {
		switch v := v.(type) {
		case string:
			if p := textcheck.Problem(v, maxLen); p != "" {
				return &KeyError{Column: cols[i], Reason: p}
			}
		case int, int32, int64:
		default:
			return &KeyError{Column: cols[i], Reason: fmt.Sprintf("unsupported type %T", v)}
		}
	}
	return nil
}

// cacheKey encodes k unambiguously (see appendCacheKey).
func cacheKey(k Key) string {
	var buf [keyBufSize]byte
	b, _ := appendCacheKey(buf[:0], k)
	return string(b)
}

// keyBufSize is the stack buffer that holds the encoding of a typical key, so encoding it
// allocates only the string; a longer key spills to the heap.
const keyBufSize = 256

// appendCacheKey appends an unambiguous encoding of k to dst: per value, s, the length as a
// uvarint and the text for a string; i and eight big-endian bytes for an integer (int, int32
// and int64 of equal value bind the same bigint, so they encode alike). It goes through
// neither fmt nor an allocation. ok is false when a value has a type no Key may hold: such a
// key fails validateKey and is never registered, so its encoding (the letter x) needs no text.
func appendCacheKey(dst []byte, k Key) (_ []byte, ok bool) {
	ok = true
	for _, v := range k {
		switch v := v.(type) {
		case string:
			dst = append(binary.AppendUvarint(append(dst, 's'), uint64(len(v))), v...)
		case int:
			dst = binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(v))
		case int32:
			dst = binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(int64(v)))
		case int64:
			dst = binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(v))
		default:
			dst, ok = append(dst, 'x'), false
		}
	}
	return dst, ok
}

// hashKey is a seeded hash of k, equal for keys that appendCacheKey encodes alike (int, int32
// and int64 of equal value hash alike), computed from the values without encoding them. ok is
// false for a value no Key may hold. Integers are mixed in unseeded: a caller who picks them
// can make two keys collide, which costs a cache miss (see completedCache), never a wrong hit.
func hashKey(seed maphash.Seed, k Key) (h uint64, ok bool) {
	for _, v := range k {
		var x uint64
		switch v := v.(type) {
		case string:
			x = maphash.String(seed, v)
		case int:
			x = uint64(v)
		case int32:
			x = uint64(int64(v))
		case int64:
			x = uint64(v)
		default:
			return 0, false
		}
		h = (bits.RotateLeft64(h, 29) ^ x) * 0x9e3779b97f4a7c15
	}
	return h, true
}

// sameKey reports whether a and b are the same key: equal under appendCacheKey's encoding.
func sameKey(a, b Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i, v := range a {
		if s, ok := v.(string); ok {
			if t, ok := b[i].(string); !ok || s != t {
				return false
			}
			continue
		}
		x, okA := keyInt(v)
		y, okB := keyInt(b[i])
		if !okA || !okB || x != y {
			return false
		}
	}
	return true
}

// keyInt is the value of an integer a Key may hold (int, int32, int64); ok is false otherwise.
func keyInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}
