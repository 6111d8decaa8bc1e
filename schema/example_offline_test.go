package schema_test

import (
	"errors"
	"fmt"

	"github.com/cassdedup/cassdedup/schema"
)

// Keyspace and table names come from configuration, so they are validated as CQL identifiers
// and quoted before they reach a statement.
func ExampleQuoteIdentifier() {
	fmt.Println(schema.QuoteIdentifier("payments_dedup"))
	_, err := schema.QuoteIdentifier("payments-dedup; DROP KEYSPACE x")
	fmt.Println(errors.Is(err, schema.ErrInvalidIdentifier))
	// Output:
	// "payments_dedup" <nil>
	// true
}
