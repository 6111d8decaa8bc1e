package bench

import (
	"context"
	"errors"
	"net"

	"github.com/gocql/gocql"
)

// outcome is how a request ended, as the report counts it.
type outcome int

const (
	outcomeOK      outcome = iota
	outcomeError           // the node or the operation answered with an error
	outcomeTimeout         // no answer in time: node-side or client-side timeout
)

// classify sorts a request's error. Timeouts are kept apart from other errors because for an
// LWT they mean "outcome unknown" and because a rising count is the first sign of overload.
func classify(err error) outcome {
	if err == nil {
		return outcomeOK
	}
	var (
		writeTimeout *gocql.RequestErrWriteTimeout
		readTimeout  *gocql.RequestErrReadTimeout
		netErr       net.Error // a peer's client (pgx, go-redis) timing out on its socket
	)
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return outcomeTimeout
	case errors.As(err, &writeTimeout), errors.As(err, &readTimeout),
		errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	}
	return outcomeError
}
