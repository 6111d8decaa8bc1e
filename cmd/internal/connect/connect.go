// Package connect turns command-line flags and environment variables into a gocql cluster
// configuration: contact points, password authentication, TLS, the local datacenter and the
// consistency levels. The cassdedup command and the local node's readiness check share it.
//
// Its values are not safe for concurrent modification; Cluster may be called from any
// goroutine once the flags are parsed.
package connect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
)

// ErrUsage matches every error that comes from the flags' values rather than the cluster.
var ErrUsage = errors.New("connect: invalid setting")

// The environment variables that give defaults to the flags, so secrets need not appear on a
// command line (where other users of the machine can read them).
const (
	EnvHosts    = "CASSANDRA_HOSTS"
	EnvUsername = "CASSANDRA_USERNAME"
	EnvPassword = "CASSANDRA_PASSWORD"
)

// Config is how to reach a cluster.
type Config struct {
	Hosts              string // comma-separated host[:port] contact points
	Port               int    // the native protocol port of hosts given without one
	Username, Password string
	TLS                bool
	CAFile             string // PEM certificates to trust instead of the system's
	CertFile, KeyFile  string // PEM client certificate and key, for nodes that require one
	ServerName         string // the name the node's certificate must carry; default: the host
	InsecureSkipVerify bool   // accept any certificate; only when given explicitly
	LocalDC            string // route to this datacenter and default to LOCAL_ consistencies
	Consistency        string // reads and commits; default QUORUM, LOCAL_QUORUM with LocalDC
	Serial             string // Paxos; default SERIAL, LOCAL_SERIAL with LocalDC
	Timeout            time.Duration
	ConnectTimeout     time.Duration
	Verbose            bool // the driver's own log lines on stderr

	getenv func(string) string // the environment's defaults, read when the flags leave a value empty
}

// Register defines the flags on fs. Hosts, username and password left empty are read from
// getenv (os.Getenv when nil) when the cluster is configured, so that a secret in the
// environment never shows in the flags' help.
func (c *Config) Register(fs *flag.FlagSet, getenv func(string) string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c.getenv = getenv
	fs.StringVar(&c.Hosts, "hosts", "", "comma-separated contact points, host[:port] (default env "+EnvHosts+", else 127.0.0.1)")
	fs.IntVar(&c.Port, "port", 9042, "native protocol port of hosts given without one")
	fs.StringVar(&c.Username, "username", "", "user for PasswordAuthenticator (default env "+EnvUsername+")")
	fs.StringVar(&c.Password, "password", "", "password (default env "+EnvPassword+"; a flag shows in the process list)")
	fs.BoolVar(&c.TLS, "tls", false, "connect with TLS (implied by any -tls-* flag)")
	fs.StringVar(&c.CAFile, "tls-ca", "", "PEM file of the certificates to trust (default: the system's)")
	fs.StringVar(&c.CertFile, "tls-cert", "", "PEM client certificate, for nodes that require one (with -tls-key)")
	fs.StringVar(&c.KeyFile, "tls-key", "", "PEM private key of -tls-cert")
	fs.StringVar(&c.ServerName, "tls-server-name", "", "name the node's certificate must carry (default: the host)")
	fs.BoolVar(&c.InsecureSkipVerify, "tls-insecure-skip-verify", false, "accept any server certificate (never do this in production)")
	fs.StringVar(&c.LocalDC, "local-dc", "", "route to this datacenter; consistencies default to LOCAL_QUORUM and LOCAL_SERIAL")
	fs.StringVar(&c.Consistency, "consistency", "", "consistency of reads and commits (default QUORUM, or LOCAL_QUORUM with -local-dc)")
	fs.StringVar(&c.Serial, "serial", "", "serial consistency of LWTs: SERIAL or LOCAL_SERIAL (default SERIAL, or LOCAL_SERIAL with -local-dc)")
	fs.DurationVar(&c.Timeout, "timeout", 15*time.Second, "per-request timeout")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 5*time.Second, "connection timeout")
	fs.BoolVar(&c.Verbose, "verbose", false, "print the driver's log lines on stderr")
}

// Consistencies returns the consistency levels the settings choose.
func (c *Config) Consistencies() (gocql.Consistency, gocql.SerialConsistency, error) {
	cl, serial := cqlsession.Consistencies(c.LocalDC)
	if c.Consistency != "" {
		var err error
		if cl, err = gocql.ParseConsistencyWrapper(strings.ToUpper(c.Consistency)); err != nil {
			return 0, 0, fmt.Errorf("%w: consistency %q", ErrUsage, c.Consistency)
		}
	}
	switch strings.ToUpper(c.Serial) {
	case "":
	case "SERIAL":
		serial = gocql.Serial
	case "LOCAL_SERIAL":
		serial = gocql.LocalSerial
	default:
		return 0, 0, fmt.Errorf("%w: serial consistency %q must be SERIAL or LOCAL_SERIAL", ErrUsage, c.Serial)
	}
	return cl, serial, nil
}

// Cluster returns the cluster configuration: cqlsession's recommended one (no driver retries,
// since an LWT must never be re-sent by the driver; no write coalescing; token-aware routing,
// over the local datacentre's nodes when one is named) with the settings' consistencies,
// timeouts, authentication and TLS.
func (c *Config) Cluster() (*gocql.ClusterConfig, error) {
	c.fromEnvironment()
	hosts, port, err := c.contactPoints()
	if err != nil {
		return nil, err
	}
	cl, serial, err := c.Consistencies()
	if err != nil {
		return nil, err
	}
	opts := []cqlsession.Option{cqlsession.WithConsistency(cl), cqlsession.WithSerialConsistency(serial),
		cqlsession.WithTimeout(c.Timeout), cqlsession.WithConnectTimeout(c.ConnectTimeout)}
	if c.LocalDC != "" {
		opts = append(opts, cqlsession.WithLocalDC(c.LocalDC))
	}
	cluster, err := cqlsession.NewCluster(hosts, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	cluster.Port = port
	if !c.Verbose {
		cluster.Logger = discard{}
	}
	if c.Username != "" || c.Password != "" {
		if c.Username == "" {
			return nil, fmt.Errorf("%w: a password without a username", ErrUsage)
		}
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: c.Username, Password: c.Password}
	}
	if c.wantsTLS() {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		cluster.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: !c.InsecureSkipVerify}
	}
	return cluster, nil
}

// fromEnvironment fills the settings the flags left empty from the environment.
func (c *Config) fromEnvironment() {
	if c.getenv == nil {
		return
	}
	for _, f := range []struct {
		v   *string
		env string
	}{{&c.Hosts, EnvHosts}, {&c.Username, EnvUsername}, {&c.Password, EnvPassword}} {
		if *f.v == "" {
			*f.v = c.getenv(f.env)
		}
	}
	if c.Hosts == "" {
		c.Hosts = "127.0.0.1"
	}
}

// contactPoints splits Hosts and works out the one port the driver uses for every node it
// discovers: the hosts' own port when they all name the same, else Port.
func (c *Config) contactPoints() ([]string, int, error) {
	var hosts []string
	port := 0
	for _, h := range strings.Split(c.Hosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		host, p, err := net.SplitHostPort(h)
		if err != nil {
			host, p = h, strconv.Itoa(c.Port)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || host == "" {
			return nil, 0, fmt.Errorf("%w: host %q", ErrUsage, h)
		}
		if port != 0 && n != port {
			return nil, 0, fmt.Errorf("%w: hosts on different ports (%d, %d): the driver reaches every node on one", ErrUsage, port, n)
		}
		port = n
		hosts = append(hosts, net.JoinHostPort(host, p))
	}
	if len(hosts) == 0 {
		return nil, 0, fmt.Errorf("%w: no hosts", ErrUsage)
	}
	return hosts, port, nil
}

func (c *Config) wantsTLS() bool {
	return c.TLS || c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.ServerName != "" || c.InsecureSkipVerify
}

func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: -tls-ca: %w", ErrUsage, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: -tls-ca %s holds no PEM certificate", ErrUsage, c.CAFile)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("%w: -tls-cert and -tls-key go together", ErrUsage)
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate: %w", ErrUsage, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// discard drops the driver's log lines.
type discard struct{}

// Print drops the line.
func (discard) Print(...any) {}

// Printf drops the line.
func (discard) Printf(string, ...any) {}

// Println drops the line.
func (discard) Println(...any) {}
