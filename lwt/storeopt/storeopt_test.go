package storeopt

import (
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

type config struct {
	Common
	extra int
}

var errBad = errors.New("pkg: invalid option")

type observer struct{}

func (*observer) Observe(lwt.Observation) {}

func TestOptionsSetTheCommonPartAndRefuseBadValues(t *testing.T) {
	c := config{Common: Defaults()}
	at := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	err := optcheck.Apply(errBad, &c, []func(*config) error{
		Keyspace[*config]("ks"), Consistency[*config](gocql.LocalQuorum),
		SerialConsistency[*config](errBad, gocql.LocalSerial), Clock[*config](errBad, func() time.Time { return at }),
		func(c *config) error { c.extra = 1; return nil },
	})
	if err != nil || c.Keyspace != "ks" || c.Consistency != gocql.LocalQuorum || c.Serial != gocql.LocalSerial ||
		!c.Now().Equal(at) || c.extra != 1 || c.SerialRead() != gocql.Consistency(gocql.LocalSerial) {
		t.Fatalf("config %+v, err %v", c, err)
	}
	var typedNil *observer
	for name, opts := range map[string][]func(*config) error{
		"serial":    {SerialConsistency[*config](errBad, gocql.SerialConsistency(gocql.Quorum))},
		"clock":     {Clock[*config](errBad, nil)},
		"typed nil": {Observer[*config](errBad, typedNil)},
	} {
		if err := optcheck.Apply(errBad, &c, opts); !errors.Is(err, errBad) {
			t.Errorf("%s: got %v, want %v", name, err, errBad)
		}
	}
}
