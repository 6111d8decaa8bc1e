package outbox

import (
	"errors"
	"strings"
	"testing"

	"github.com/gocql/gocql"
)

// TestRelayNameIsText: a relay name that is not UTF-8 is refused when the relay is made, as an
// empty or over-long one is; it keys the relays' table, whose text column Cassandra would refuse
// it in at the relay's first pass.
func TestRelayNameIsText(t *testing.T) {
	t.Parallel()
	for name, why := range map[string]string{"orders\xff": "not valid UTF-8", "": "empty", strings.Repeat("r", MaxNameLength+1): "256 bytes"} {
		_, err := NewRelay(&gocql.Session{}, &recorder{}, WithRelayName(name))
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "WithRelayName") || !strings.Contains(err.Error(), why) {
			t.Errorf("WithRelayName(%q): %v", name, err)
		}
	}
	if _, err := NewRelay(&gocql.Session{}, &recorder{}, WithRelayName("orders-eu")); err != nil {
		t.Fatal(err)
	}
}
