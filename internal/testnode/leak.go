package testnode

import "go.uber.org/goleak"

// DriverReconnects returns the goleak options for the goroutines of gocql connection pools that
// were dialling a node when their session closed: a pool whose dial to a node a test stopped,
// cut off or slowed down failed sleeps a second before it tries again (as many times as its
// reconnection policy allows), and only then sees that its session is closed. They end by
// themselves, but can end after the tests did.
func DriverReconnects() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
	}
}
