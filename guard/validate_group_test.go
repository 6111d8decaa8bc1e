package guard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/guard"
)

// TestValidateGroup: a group is refused exactly when every message of it is.
func TestValidateGroup(t *testing.T) {
	t.Parallel()
	for group, ok := range map[string]bool{"billing": true, "": false, strings.Repeat("g", guard.MaxMessageField+1): false, "b\xffilling": false} {
		err := guard.ValidateGroup(group)
		if (err == nil) != ok || err != nil && !errors.Is(err, guard.ErrInvalidMessage) {
			t.Errorf("ValidateGroup(%q) = %v", group, err)
		}
	}
}

// FuzzValidateGroup: ValidateGroup accepts a group exactly when the guard accepts a message of it.
func FuzzValidateGroup(f *testing.F) {
	f.Add("billing")
	f.Add("\xc3")
	f.Add("")
	f.Fuzz(func(t *testing.T, group string) {
		byGroup := guard.ValidateGroup(group) == nil
		byMessage := guard.ValidateMessage(guard.Message{Scope: guard.Scope{Group: group, Topic: "orders"}, ID: "e-1"}) == nil
		if byGroup != byMessage {
			t.Fatalf("ValidateGroup(%q) accepts: %t; a message of it: %t", group, byGroup, byMessage)
		}
	})
}

// A consumer adapter checks its group before it consumes anything: the guard would refuse every
// message of a group it cannot name.
func ExampleValidateGroup() {
	fmt.Println(guard.ValidateGroup("billing"))
	fmt.Println(guard.ValidateGroup(strings.Repeat("g", 300)))
	// Output:
	// <nil>
	// guard: invalid message: group: 300 bytes, the limit is 255
}
