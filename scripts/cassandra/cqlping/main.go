// Command cqlping waits until a Cassandra node answers a CQL query, then prints its release
// version and paxos variant. node.sh uses it as the node's readiness check.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cqlping:", err)
		os.Exit(1)
	}
}

func run() error {
	hosts := flag.String("hosts", "127.0.0.1:9042", "comma-separated host:port list")
	wait := flag.Duration("wait", 0, "keep trying this long before giving up")
	pid := flag.Int("pid", 0, "stop waiting early when this process exits")
	flag.Parse()

	deadline := time.Now().Add(*wait)
	for {
		version, paxos, err := ping(strings.Split(*hosts, ","))
		if err == nil {
			fmt.Fprintf(os.Stderr, "cqlping: Cassandra %s answers, paxos_variant %s\n", version, paxos)
			return nil
		}
		if *pid > 0 && syscall.Kill(*pid, 0) != nil {
			return fmt.Errorf("process %d exited before the node answered: %w", *pid, err)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

func ping(hosts []string) (version, paxos string, err error) {
	cluster := gocql.NewCluster(hosts...)
	cluster.Timeout = 5 * time.Second
	cluster.ConnectTimeout = 2 * time.Second
	cluster.DisableInitialHostLookup = true
	cluster.Logger = discard{}
	session, err := cluster.CreateSession()
	if err != nil {
		return "", "", err
	}
	defer session.Close()
	if err := session.Query(`SELECT release_version FROM system.local`).Scan(&version); err != nil {
		return "", "", err
	}
	err = session.Query(`SELECT value FROM system_views.settings WHERE name = 'paxos_variant'`).Scan(&paxos)
	if errors.Is(err, gocql.ErrNotFound) {
		paxos = "unknown"
		err = nil
	}
	return version, paxos, err
}

// discard keeps the driver's reconnect chatter out of the start-up output.
type discard struct{}

// Print discards the driver's log line.
func (discard) Print(...interface{}) {}

// Printf discards the driver's log line.
func (discard) Printf(string, ...interface{}) {}

// Println discards the driver's log line.
func (discard) Println(...interface{}) {}
