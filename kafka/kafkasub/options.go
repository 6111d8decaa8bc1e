package kafkasub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/guard"
)

// Option configures a Consumer (New). A bad option names itself in the error, which matches
// ErrInvalidOption.
type Option func(*config) error

type config struct {
	client   []kgo.Opt
	message  func(group string, r *kgo.Record) (guard.Message, error)
	setBy    string // the option that set message, if any: WithMessage or WithTimeHeader
	preCheck PreCheck
	poison   func(ctx context.Context, r *kgo.Record, err error) error
	results  func(r *kgo.Record, res guard.BatchResult)
	maxPoll  int
	backoff  time.Duration
	log      *slog.Logger
}

// Defaults of the options.
const (
	DefaultMaxPollRecords = 500
	DefaultRetryBackoff   = 200 * time.Millisecond
)

func newConfig(opts []Option) (config, error) {
	cfg := config{message: Message, maxPoll: DefaultMaxPollRecords, backoff: DefaultRetryBackoff,
		log: slog.Default()}
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	if len(cfg.client) == 0 {
		return cfg, fmt.Errorf("%w: WithClient is required (seed brokers, consumer group, topics)", ErrInvalidOption)
	}
	if cfg.poison == nil {
		log := cfg.log
		cfg.poison = func(_ context.Context, r *kgo.Record, err error) error {
			if errors.Is(err, ErrBrokerTime) {
				// The topic's setting, not the record's fault: skipping would drop every record of
				// the topic. Held, they are processed once the consumer reads the event's time.
				return err
			}
			log.Error("kafkasub: poison record skipped", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
			return nil
		}
	}
	return cfg, nil
}

// WithClient gives the franz-go client's options: at least kgo.SeedBrokers, kgo.ConsumerGroup
// and kgo.ConsumeTopics, and anything else a team sets on its consumers (session timeout, TLS,
// SASL, the balancer, the reset offset). Required; several calls add up.
func WithClient(opts ...kgo.Opt) Option {
	return func(c *config) error {
		if len(opts) == 0 {
			return fmt.Errorf("%w: WithClient with no options", ErrInvalidOption)
		}
		c.client = append(c.client, opts...)
		return nil
	}
}

// WithMessage replaces Message, the default that reads the id from header.ID: fn turns a
// record of group into the guard's message. The id must be the same on every delivery and every
// producer duplicate of the record, and so must the time (ProcessBatch places records by it):
// take the record's timestamp through RecordTime, which refuses one the broker set, or the
// event's own time (HeaderTimeMessage). A record fn refuses is a poison record (WithPoison).
// Give WithMessage or WithTimeHeader, not both.
func WithMessage(fn func(group string, r *kgo.Record) (guard.Message, error)) Option {
	return func(c *config) error {
		if fn == nil {
			return fmt.Errorf("%w: WithMessage(nil)", ErrInvalidOption)
		}
		return c.setMessage("WithMessage", fn)
	}
}

// WithTimeHeader takes each message's Time from the record header named header instead of the
// record's timestamp (HeaderTimeMessage): Unix milliseconds in decimal, as header.Time
// carries the event's staging time. The time is then the event's own, the same on every copy
// whatever the topic's message.timestamp.type (LogAppendTime included) or a producer that
// restamps a re-send. A record without the header is a poison record (ErrNoTime).
func WithTimeHeader(header string) Option {
	return func(c *config) error {
		if header == "" {
			return fmt.Errorf("%w: WithTimeHeader(\"\")", ErrInvalidOption)
		}
		return c.setMessage("WithTimeHeader", HeaderTimeMessage(header))
	}
}

// setMessage makes fn the message function, unless another option already set it.
func (c *config) setMessage(by string, fn func(group string, r *kgo.Record) (guard.Message, error)) error {
	if c.setBy != "" && c.setBy != by {
		return fmt.Errorf("%w: %s and %s both set how a record becomes a message: give one", ErrInvalidOption, c.setBy, by)
	}
	c.message, c.setBy = fn, by
	return nil
}

// WithFastPath turns the guard's fast path on for the partitions assigned to this consumer: on
// assignment the consumer makes each one's pre-check with newPreCheck and declares it with
// Guard.Own at the group's generation before it processes any of its records; on revocation or
// loss it calls Disown. Off by default: every record takes the LWT path.
func WithFastPath(newPreCheck PreCheck) Option {
	return func(c *config) error {
		if newPreCheck == nil {
			return fmt.Errorf("%w: WithFastPath(nil)", ErrInvalidOption)
		}
		c.preCheck = newPreCheck
		return nil
	}
}

// WithPoison sets what happens to a poison record: one whose message used up its attempts
// (guard.Poison, err is an *guard.PoisonError) or that WithMessage refused. The default logs
// it and goes on, except a record refused for its broker's time (ErrBrokerTime): that is the
// topic's setting, so the default delivers it again, holding up its partition (logged at level
// ERROR) until the consumer takes the time from the event (WithTimeHeader). A hook that returns nil lets the offset move past the record (send it to a
// dead-letter topic first); an error delivers the record again.
func WithPoison(fn func(ctx context.Context, r *kgo.Record, err error) error) Option {
	return func(c *config) error {
		if fn == nil {
			return fmt.Errorf("%w: WithPoison(nil)", ErrInvalidOption)
		}
		c.poison = fn
		return nil
	}
}

// WithResults calls fn with what the guard did with every record (for metrics and tallies):
// Processed and Duplicate are committed past, Poison goes to WithPoison, anything else is
// delivered again. A record WithMessage refused is reported Poison with its error. fn runs on
// the goroutine of the record's partition, concurrently for different partitions.
func WithResults(fn func(r *kgo.Record, res guard.BatchResult)) Option {
	return func(c *config) error {
		if fn == nil {
			return fmt.Errorf("%w: WithResults(nil)", ErrInvalidOption)
		}
		c.results = fn
		return nil
	}
}

// WithMaxPollRecords bounds the records of one poll (default 500; 1 to 100,000).
func WithMaxPollRecords(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 100_000 {
			return fmt.Errorf("%w: WithMaxPollRecords(%d): 1 to 100,000", ErrInvalidOption, n)
		}
		c.maxPoll = n
		return nil
	}
}

// WithRetryBackoff sets the pause after a poll that left a record to redeliver (default 200 ms;
// 1 ms to 1 min), so a failing handler is not retried in a tight loop.
func WithRetryBackoff(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond || d > time.Minute {
			return fmt.Errorf("%w: WithRetryBackoff(%v): 1ms to 1m", ErrInvalidOption, d)
		}
		c.backoff = d
		return nil
	}
}

// WithLogger sets where fetch errors, failed commits, ownership changes and poison records are
// logged (default: slog.Default() when New runs).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}
