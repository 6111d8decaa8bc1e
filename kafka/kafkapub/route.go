package kafkapub

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/outbox"
)

// ErrInvalidOption: New was given a nil client, no topic and no route, or a bad option. The
// error names the argument or option.
var ErrInvalidOption = errors.New("kafkapub: invalid option")

// ErrNoRoute: a route returned no topic, or a name Kafka refuses, for a message. Publish marks
// that message's error with outbox.ErrRejected as well: sending it again cannot succeed, so the
// relay parks it after its attempts (outbox.WithMaxAttempts), where an operator sees it
// (`cassdedup outbox parked`), and the other messages go on.
var ErrNoRoute = errors.New("kafkapub: no topic for the message")

// Option configures a Publisher.
type Option func(*config) error

type config struct {
	route func(outbox.Message) string
}

// Route picks the topic of a message. It must be a pure function of the message (the relay
// republishes a message after a failure, and every copy must go where the first went) and
// safe for concurrent use.
type Route func(m outbox.Message) string

// WithRoute publishes each message to the topic route returns instead of New's topic, as
// Debezium's outbox EventRouter routes by aggregate type: a topic per event type (ByType), or
// any function of the message. A message routed to no topic, or to a name Kafka refuses, fails
// with ErrNoRoute (and outbox.ErrRejected). The topics must exist, or the broker must create them.
// Ordering holds per topic and key, as before: route every event of one key to one topic.
func WithRoute(route Route) Option {
	return optcheck.Set(ErrInvalidOption, route == nil, "WithRoute(nil)", "a route is required",
		func(c *config) { c.route = route })
}

// ByType routes a message to prefix followed by its type: ByType("outbox.event.") sends an
// "order.placed" event to the topic "outbox.event.order.placed".
func ByType(prefix string) Route {
	return func(m outbox.Message) string { return prefix + m.Type }
}

// topicOf is the topic of m: the route's, checked, or the Publisher's one topic.
func (p *Publisher) topicOf(m outbox.Message) (string, error) {
	if p.route == nil {
		return p.topic, nil
	}
	t := p.route(m)
	if err := validTopic(t); err != nil {
		return "", fmt.Errorf("%w: %w: event %s of type %q: %w", outbox.ErrRejected, ErrNoRoute, m.ID, m.Type, err)
	}
	return t, nil
}

// validTopic applies Kafka's rules for a topic name: 1 to 249 characters of ASCII letters,
// digits, '.', '_' and '-', and neither "." nor "..".
func validTopic(t string) error {
	switch {
	case t == "":
		return errors.New("empty topic")
	case len(t) > 249:
		return fmt.Errorf("topic of %d characters (at most 249)", len(t))
	case t == "." || t == "..":
		return fmt.Errorf("topic %q", t)
	}
	if i := strings.IndexFunc(t, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}); i >= 0 {
		return fmt.Errorf("topic %q: character %q is not allowed", t, t[i])
	}
	return nil
}
