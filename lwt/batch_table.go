package lwt

import (
	"fmt"
	"strings"

	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/schema"
)

// MaxBatchRows is the most records one conditional batch of a BatchStore claims or ends: it is
// cas.MaxBatchRows, the bound every conditional batch of this module keeps.
const MaxBatchRows = cas.MaxBatchRows

// BatchTable describes a table whose partitions each hold many exactly-once records, so that
// one conditional batch (one Paxos round) can claim or end many of them: a partition key of
// PartitionColumns, in order, and one text clustering column, KeyColumn, naming the record
// within its partition. Besides those, the table has the record columns of Table and
// lease_owner, a uuid cell written with the lease as its own TTL (see
// BatchStore). Names come from configuration, so they are validated as CQL identifiers and
// quoted.
type BatchTable struct {
	Keyspace         string
	Name             string
	PartitionColumns []string
	KeyColumn        string
}

// batchStatements are the CQL texts of a BatchStore. Every statement binds the partition
// values, then the record's key, where its WHERE clause begins.
type batchStatements struct {
	insert, lease, reclaim, takeover, finish, renew, read string
	put                                                   string // the fast path's plain write
}

// validate checks the descriptor and returns the statements.
func (t BatchTable) validate() (batchStatements, error) {
	qualified, err := schema.QualifiedName(t.Keyspace, t.Name)
	if err != nil {
		return batchStatements{}, fmt.Errorf("lwt: batch table: %w", err)
	}
	if len(t.PartitionColumns) == 0 {
		return batchStatements{}, fmt.Errorf("lwt: batch table %s: no partition columns", qualified)
	}
	seen := map[string]bool{"lease_owner": true}
	for _, c := range recordColumns {
		seen[c] = true
	}
	var cols []string
	for _, c := range append(append([]string{}, t.PartitionColumns...), t.KeyColumn) {
		q, err := schema.QuoteIdentifier(c)
		if err != nil {
			return batchStatements{}, fmt.Errorf("lwt: batch table %s: key column: %w", qualified, err)
		}
		if seen[c] {
			return batchStatements{}, fmt.Errorf("lwt: batch table %s: key column %q repeated or a record column", qualified, c)
		}
		seen[c] = true
		cols = append(cols, q)
	}
	return buildBatchStatements(qualified, cols), nil
}

func buildBatchStatements(table string, cols []string) batchStatements {
	where := " WHERE " + strings.Join(cols, " = ? AND ") + " = ?"
	ifClaim := " IF owner = ? AND fence = ? AND status = "
	// A new claim rewrites every cell (result to null) so the whole record shares the new expiry.
	claim := "UPDATE " + table + " USING TTL ? SET fingerprint = ?, status = 'STARTED', owner = ?, fence = ?, attempts = ?, result = null, created_at = ?, updated_at = ?, expires_at = ?" + where + ifClaim
	inClause := strings.Join(cols[:len(cols)-1], " = ? AND ") + " = ? AND " + cols[len(cols)-1] + " IN ?"
	return batchStatements{
		insert: "INSERT INTO " + table + " (" + strings.Join(cols, ", ") +
			", fingerprint, status, owner, fence, attempts, created_at, updated_at, expires_at) VALUES (" +
			strings.Repeat("?, ", len(cols)) + "?, 'STARTED', ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		// The lease cell rides in the same batch as the claim, with the lease as its TTL: once the
		// claim goes unrenewed for a lease, Cassandra's clock has removed it.
		lease:   "UPDATE " + table + " USING TTL ? SET lease_owner = ?" + where,
		reclaim: claim + "'RELEASED'",
		// A STARTED record is taken over only once its lease cell is gone, as the node judges it.
		takeover: claim + "'STARTED' AND lease_owner = null",
		finish:   "UPDATE " + table + " USING TTL ? SET status = ?, result = ?, updated_at = ?" + where + ifClaim + "'STARTED'",
		renew:    "UPDATE " + table + " USING TTL ? SET lease_owner = ?" + where + ifClaim + "'STARTED'",
		put: "INSERT INTO " + table + " (" + strings.Join(cols, ", ") +
			", fingerprint, status, owner, fence, attempts, result, created_at, updated_at, expires_at, epoch) VALUES (" +
			strings.Repeat("?, ", len(cols)) + "?, 'COMPLETED', ?, 0, 1, ?, ?, ?, ?, ?) USING TTL ?",
		read: "SELECT " + cols[len(cols)-1] + ", fingerprint, status, owner, fence, lease_owner, attempts, result, created_at, updated_at, expires_at FROM " +
			table + " WHERE " + inClause,
	}
}

// validateItems checks the keys and fingerprints of one batch: 1 to MaxBatchRows items with
// distinct, usable keys.
func validateItems(column string, items []BatchItem, maxKey int) error {
	if len(items) == 0 || len(items) > MaxBatchRows {
		return fmt.Errorf("%w: %d items in a batch, 1 to %d allowed", ErrInvalidArgument, len(items), MaxBatchRows)
	}
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if p := textcheck.Problem(it.Key, maxKey); p != "" {
			return &KeyError{Column: column, Reason: p}
		}
		if seen[it.Key] {
			return &KeyError{Column: column, Reason: fmt.Sprintf("%q twice in one batch", it.Key)}
		}
		seen[it.Key] = true
		if len(it.Fingerprint) > maxFingerprint {
			return &KeyError{Column: "fingerprint", Reason: fmt.Sprintf("%d bytes, limit %d (store a hash of the request)", len(it.Fingerprint), maxFingerprint)}
		}
	}
	return nil
}
