package outbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/schema"
)

// The key layouts of the records a run's events may ride on: idempotency_keys' (ExecuteOnce,
// httpidem) and the consumer guard's processed_messages (guard.Guard.Process).
var (
	operationColumns = []string{"namespace", "key"}
	guardColumns     = []string{"consumer_group", "topic", "partition", "message_id"}
)

// guardPrefix starts every namespace made by GuardNamespace. An operation's namespace may not
// start with it when it stages events (ErrUnsupportedKey), so an intent of a message and an
// intent of an operation never share a row of outbox_intents.
const guardPrefix = "\x00"

// GuardNamespace is the Namespace of the messages staged by a handler of guard.Guard.Process for
// a message of (group, topic, partition); their OpKey is the message's id, and their IDs are
// EventID(GuardNamespace(group, topic, partition), id, sequence).
func GuardNamespace(group, topic string, partition int32) string {
	return guardPrefix + group + "\x00" + topic + "\x00" + strconv.FormatInt(int64(partition), 10)
}

// parseGuardNamespace is the inverse of GuardNamespace: it accepts only what GuardNamespace
// prints, so one message has one namespace.
func parseGuardNamespace(ns string) (group, topic string, partition int32, ok bool) {
	rest, ok := strings.CutPrefix(ns, guardPrefix)
	parts := strings.Split(rest, "\x00")
	if !ok || len(parts) != 3 {
		return "", "", 0, false
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 || GuardNamespace(parts[0], parts[1], int32(p)) != ns {
		return "", "", 0, false
	}
	return parts[0], parts[1], int32(p), true
}

// record names the exactly-once record a run's events ride on, as its intent stores it.
type record struct {
	table     string // "" for the outbox's records table (WithKeyspace, idempotency_keys); else a guard table of the keyspace
	namespace string // the operation's namespace, or the message's GuardNamespace
	key       string // the operation's key, or the message's id
}

// recordOf is the record of a run over table t with key k. The relay reads records in the
// outbox's keyspace only, and operations in its records table only: a run elsewhere could
// commit events that no relay ever finds, so it is refused.
func (c config) recordOf(t lwt.Table, k lwt.Key) (record, error) {
	if t.Keyspace != c.keyspace {
		return record{}, fmt.Errorf("%w: the record is in keyspace %q, the outbox's is %q", ErrUnsupportedKey, t.Keyspace, c.keyspace)
	}
	switch {
	case slices.Equal(t.KeyColumns, operationColumns) && len(k) == 2:
		ns, ok1 := k[0].(string)
		key, ok2 := k[1].(string)
		switch {
		case !ok1 || !ok2:
		case t.Name != c.records:
			return record{}, fmt.Errorf("%w: the record is in table %q, the relay reads %q", ErrUnsupportedKey, t.Name, c.records)
		case strings.HasPrefix(ns, guardPrefix):
			return record{}, fmt.Errorf("%w: a namespace starting with NUL is reserved for the guard's messages", ErrUnsupportedKey)
		default:
			return record{namespace: ns, key: key}, nil
		}
	case slices.Equal(t.KeyColumns, guardColumns) && len(k) == 4:
		group, ok1 := k[0].(string)
		topic, ok2 := k[1].(string)
		partition, ok3 := k[2].(int32)
		id, ok4 := k[3].(string)
		if ok1 && ok2 && ok3 && ok4 && !strings.Contains(group, "\x00") && !strings.Contains(topic, "\x00") {
			return record{table: t.Name, namespace: GuardNamespace(group, topic, partition), key: id}, nil
		}
	}
	return record{}, ErrUnsupportedKey
}

// recordQuery reads the status, owner, fence and outbox cell of the record of in.
func (r judge) recordQuery(in intent) (*gocql.Query, error) {
	if in.record == "" {
		return r.session.Query(r.read, in.namespace, in.key), nil
	}
	group, topic, partition, ok := parseGuardNamespace(in.namespace)
	table, err := schema.QualifiedName(r.cfg.keyspace, in.record)
	if !ok || err != nil {
		return nil, fmt.Errorf("%w: intent of %q in table %q", ErrMalformedIntent, in.namespace, in.record)
	}
	return r.session.Query("SELECT status, owner, fence, "+ColumnName+" FROM "+table+
		" WHERE consumer_group = ? AND topic = ? AND partition = ? AND message_id = ?", group, topic, partition, in.key), nil
}
