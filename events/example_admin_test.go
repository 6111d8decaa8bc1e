package events_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt"
)

// Let a poison message run again once its cause is fixed: the next delivery runs the handler.
func ExampleGuard_ReleaseMessage() {
	guard, err := events.NewGuard(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := events.Scope{Group: "billing", Topic: "invoices", Partition: 3}
	res, err := guard.ReleaseMessage(context.Background(), scope, "inv-1007", lwt.WithNote("smtp relay fixed, INC-2231"))
	switch {
	case errors.Is(err, lwt.ErrInProgress):
		fmt.Println("a consumer is processing it now")
	case err != nil:
		fmt.Println(err)
	case res.Changed:
		fmt.Println("released; it was", res.Before.Status, "after", res.Before.Attempts, "attempts")
	}
}
