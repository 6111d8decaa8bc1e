package schema

import (
	"errors"
	"fmt"
	"regexp"
)

// DefaultKeyspace is the keyspace the CQL files create and use when applied with cqlsh.
const DefaultKeyspace = "cassdedup"

// ErrInvalidIdentifier is returned for a keyspace or table name that is not a plain CQL
// identifier. (A datacenter name is not an identifier: a bad one is ErrInvalidReplication.)
var ErrInvalidIdentifier = errors.New("schema: invalid identifier")

// Cassandra limits keyspace and table names to 48 word characters; we also require a leading
// letter so a quoted name never differs from the unquoted spelling a user sees in cqlsh.
var identifierPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// ValidateIdentifier reports whether name may be used as a keyspace or table name: a letter
// followed by at most 47 letters, digits or underscores. The error wraps ErrInvalidIdentifier.
func ValidateIdentifier(name string) error {
	if !identifierPattern.MatchString(name) {
		return fmt.Errorf("%w: %q must be a letter followed by up to 47 letters, digits or underscores", ErrInvalidIdentifier, name)
	}
	return nil
}

// QuoteIdentifier validates name and returns it double-quoted for use in CQL text.
func QuoteIdentifier(name string) (string, error) {
	if err := ValidateIdentifier(name); err != nil {
		return "", err
	}
	return `"` + name + `"`, nil
}

// QualifiedName validates both names and returns "keyspace"."table".
func QualifiedName(keyspace, table string) (string, error) {
	ks, err := QuoteIdentifier(keyspace)
	if err != nil {
		return "", fmt.Errorf("keyspace: %w", err)
	}
	tb, err := QuoteIdentifier(table)
	if err != nil {
		return "", fmt.Errorf("table: %w", err)
	}
	return ks + "." + tb, nil
}
