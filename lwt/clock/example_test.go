package clock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/lwt/clock"
)

// The example needs a node, so it is compiled but not run by go test.

// A component that buckets by time measures its clock first, refuses while the offset is not
// known within its limit, and buckets by the cluster's time.
func ExampleMeter_Check() {
	cluster, err := cqlsession.NewCluster([]string{"127.0.0.1"})
	if err != nil {
		log.Fatal(err)
	}
	session, err := cluster.CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	m, err := clock.New(session, clock.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)), "stager"))
	if err != nil {
		log.Fatal(err)
	}
	r, err := m.Check(context.Background(), time.Second)
	var oe *clock.OffsetError
	if errors.As(err, &oe) {
		log.Fatalf("refused: offset %v, bound %v, limit %v", oe.Offset, oe.Bound, oe.Limit)
	}
	fmt.Printf("this host is %v ±%v off the cluster; bucket by %v\n", r.Offset, r.Bound, m.Now().Truncate(time.Minute))
}
