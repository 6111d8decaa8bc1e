// Command cqlping waits until a Cassandra node answers a CQL query, then prints its release
// version and paxos variant. node.sh uses it as the node's readiness check. It takes the
// cassdedup command's connection flags (-hosts, -username, -tls-ca, ...), so it also waits for
// a node with password authentication until its default superuser exists.
//
// With -peers N it also waits until the node holds N peers in its ring, each with its
// datacentre and tokens. A node answers CQL before gossip has told it of the nodes that started
// beside it, and until then it refuses a keyspace that places replicas in their datacentre
// ("Unrecognized strategy option {dc2} passed to NetworkTopologyStrategy"), so a cluster is up
// only when every node knows every other.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cmd/internal/connect"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cqlping:", err)
		os.Exit(1)
	}
}

func run() error {
	var conn connect.Config
	conn.Register(flag.CommandLine, nil)
	wait := flag.Duration("wait", 0, "keep trying this long before giving up")
	pid := flag.Int("pid", 0, "stop waiting early when this process exits")
	peers := flag.Int("peers", 0, "also wait until the node holds this many peers in its ring, each with its datacentre and tokens")
	flag.Parse()
	if _, err := conn.Cluster(); err != nil {
		return err // a bad setting: no point in waiting
	}
	deadline := time.Now().Add(*wait)
	for {
		version, paxos, known, err := ping(&conn, *peers)
		if err == nil {
			ring := ""
			if *peers > 0 {
				ring = fmt.Sprintf(", %d peers in its ring", known)
			}
			fmt.Fprintf(os.Stderr, "cqlping: Cassandra %s answers, paxos_variant %s%s\n", version, paxos, ring)
			return nil
		}
		if *pid > 0 && syscall.Kill(*pid, 0) != nil {
			return fmt.Errorf("process %d exited before the node answered: %w", *pid, err)
		}
		if time.Now().After(deadline) {
			return err
		}
		// A refused connection fails at once and costs the node nothing: a short wait lets every
		// start of a node (tests, nemesis restarts, clusters) go on within a quarter of a second of
		// its first answer, not up to a second later.
		time.Sleep(250 * time.Millisecond)
	}
}

// ping connects with a configuration of its own: gocql's token-aware policy, which the
// recommended configuration uses, serves one session only. It counts the node's ring peers
// only when asked to wait for some (peers > 0): the plain readiness check needs no third query.
func ping(conn *connect.Config, peers int) (version, paxos string, known int, err error) {
	cluster, err := conn.Cluster()
	if err != nil {
		return "", "", 0, err
	}
	// One node: looking up peers only slows the check.
	cluster.DisableInitialHostLookup = true
	session, err := cluster.CreateSession()
	if err != nil {
		return "", "", 0, err
	}
	defer session.Close()
	if err := session.Query(`SELECT release_version FROM system.local`).Scan(&version); err != nil {
		return "", "", 0, err
	}
	err = session.Query(`SELECT value FROM system_views.settings WHERE name = 'paxos_variant'`).Scan(&paxos)
	if errors.Is(err, gocql.ErrNotFound) {
		paxos = "unknown"
		err = nil
	}
	if err != nil || peers == 0 {
		return version, paxos, 0, err
	}
	if known, err = ringPeers(session); err == nil && known < peers {
		err = fmt.Errorf("the node holds %d of %d peers in its ring", known, peers)
	}
	return version, paxos, known, err
}

// ringPeers counts the peers the node has learnt with a datacentre and tokens: the ones it
// can place replicas on.
func ringPeers(session *gocql.Session) (int, error) {
	iter := session.Query(`SELECT data_center, tokens FROM system.peers_v2`).Iter()
	var (
		dc     string
		tokens []string
		known  int
	)
	for iter.Scan(&dc, &tokens) {
		if dc != "" && len(tokens) > 0 {
			known++
		}
	}
	return known, iter.Close()
}
