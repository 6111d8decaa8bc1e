package peers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the exactly-once design on one Redis server. It is safe for concurrent use.
//
// A key's record is one string value: a status byte ('S' started, 'D' done), the request's
// fingerprint, then the claim's token (started) or the stored result (done). A claim is
// SET key started NX PX lease GET: one round trip that either claims a new key (the answer is
// nil) or returns the record that is there, so a duplicate costs the same single command. The
// result is stored by a script that replaces the record only while it still holds this claim's
// token (a claim whose lease expired may have been taken by a retry), with the retention as its
// expiry. A crashed run's claim expires with its lease, and a retry claims the key again.
type Redis struct {
	client    *redis.Client
	lease     time.Duration
	retention time.Duration
}

// The scripts are loaded once and run by their SHA (EVALSHA; go-redis falls back to EVAL).
var (
	redisComplete = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`)
	redisRelease = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
)

// OpenRedis connects a client with conns pooled connections to the server at addr, all opened
// before it returns, and loads the scripts. A request is never retried by the client: a
// re-sent claim would be a second request the benchmark must not hide.
func OpenRedis(ctx context.Context, addr string, conns int, timeout time.Duration) (*Redis, error) {
	if conns < 1 || timeout <= 0 {
		return nil, fmt.Errorf("%w: %d connections, timeout %v", ErrInvalid, conns, timeout)
	}
	c := redis.NewClient(&redis.Options{
		Addr: addr, PoolSize: conns, MinIdleConns: conns, MaxRetries: -1,
		ReadTimeout: timeout, WriteTimeout: timeout, DialTimeout: timeout, PoolTimeout: timeout,
	})
	r := &Redis{client: c, lease: DefaultLease, retention: DefaultRetention}
	if err := r.openAll(ctx, conns); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return r, nil
}

// openAll runs conns commands at once, so the pool holds that many connections, and loads the
// scripts.
func (r *Redis) openAll(ctx context.Context, conns int) error {
	errs := make(chan error, conns)
	for range conns {
		go func() { errs <- r.client.Ping(ctx).Err() }()
	}
	var all []error
	for range conns {
		all = append(all, <-errs)
	}
	for _, s := range []*redis.Script{redisComplete, redisRelease} {
		all = append(all, s.Load(ctx, r.client).Err())
	}
	return errors.Join(all...)
}

// Close closes the client.
func (r *Redis) Close() error { return r.client.Close() }

// SetLease sets how long a claim blocks its key before it expires and a retry may claim it.
func (r *Redis) SetLease(d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("%w: lease %v (at least 1ms)", ErrInvalid, d)
	}
	r.lease = d
	return nil
}

// Set is the plain write: SET key value PX retention.
func (r *Redis) Set(ctx context.Context, key string, value []byte) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	return r.client.Set(ctx, key, value, r.retention).Err()
}

func record(status byte, fp []byte, rest string) string {
	return string(status) + string(fp) + rest
}

// ExecuteOnce runs fn once for key: the first call claims the key, runs fn and stores its
// result; a later call with the same fingerprint replays it without running fn. A run in
// progress answers ErrInProgress until its claim expires. An error of fn releases the key.
func (r *Redis) ExecuteOnce(ctx context.Context, key string, fp []byte, fn func(context.Context) ([]byte, error)) (Result, error) {
	if err := validate(key, fp); err != nil {
		return Result{}, err
	}
	claim := record('S', fp, newToken())
	old, err := r.client.Do(ctx, "SET", key, claim, "PX", r.lease.Milliseconds(), "NX", "GET").Text()
	switch {
	case errors.Is(err, redis.Nil):
		return r.run(ctx, key, claim, fp, fn)
	case err != nil:
		return Result{}, err
	case len(old) < 1+FingerprintSize || (old[0] != 'S' && old[0] != 'D'):
		return Result{}, fmt.Errorf("peers: key %s holds a value that is no record", key)
	case old[1:1+FingerprintSize] != string(fp):
		return Result{}, ErrKeyReuse
	case old[0] == 'D':
		return Result{Value: []byte(old[1+FingerprintSize:]), Replay: true}, nil
	}
	return Result{}, ErrInProgress
}

func (r *Redis) run(ctx context.Context, key, claim string, fp []byte, fn func(context.Context) ([]byte, error)) (Result, error) {
	value, err := fn(ctx)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if relErr := redisRelease.Run(rctx, r.client, []string{key}, claim).Err(); relErr != nil {
			err = errors.Join(err, fmt.Errorf("release %s: %w", key, relErr))
		}
		return Result{}, err
	}
	done, err := redisComplete.Run(ctx, r.client, []string{key}, claim, record('D', fp, string(value)),
		r.retention.Milliseconds()).Int()
	if err != nil {
		return Result{}, err
	}
	if done != 1 {
		return Result{}, ErrLeaseLost
	}
	return Result{Value: value}, nil
}

// Probe reads what the server says of its version, persistence and replicas.
func (r *Redis) Probe(ctx context.Context) (Server, error) {
	info, err := r.client.Info(ctx, "server", "replication").Result()
	if err != nil {
		return Server{}, fmt.Errorf("probe redis: %w", err)
	}
	conf, err := r.client.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return Server{}, fmt.Errorf("probe redis: %w", err)
	}
	s := Server{Store: "redis", Version: infoField(info, "redis_version")}
	switch {
	case conf["appendonly"] != "yes":
		s.Durability = "no append-only file (snapshots at most)"
	case conf["appendfsync"] == "always":
		s.Durability = "AOF, appendfsync always (fsync before the reply)"
	case conf["appendfsync"] == "everysec":
		s.Durability = "AOF, appendfsync everysec (fsync once a second)"
	default:
		s.Durability = "AOF, appendfsync " + conf["appendfsync"]
	}
	s.Replication = "1 node, no replica"
	if n := infoField(info, "connected_slaves"); n != "" && n != "0" {
		s.Replication = infoField(info, "role") + " + " + n + " async replica(s)"
	}
	return s, nil
}

// infoField returns a field of INFO's "name:value" lines.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
