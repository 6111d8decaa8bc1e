package cassandratest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Image is the Docker image used when no CASSANDRA_HOSTS is set and a Docker engine answers.
const Image = "cassandra:5.0"

// paxosV2 turns on Paxos v2 in the image's stock yaml, idempotently (the entrypoint rewrites the
// same file on every start), then hands over to the image's own entrypoint.
const paxosV2 = `f=/etc/cassandra/cassandra.yaml; grep -q '^paxos_variant:' $f || echo 'paxos_variant: v2' >> $f; exec docker-entrypoint.sh cassandra -f`

var (
	hostsOnce sync.Once
	hosts     []string
	hostsErr  error
)

// Hosts returns the contact points of the Cassandra node the tests use, starting a container
// when needed; see the package documentation for the order. The result is cached per process.
func Hosts() ([]string, error) {
	hostsOnce.Do(func() { hosts, hostsErr = findHosts() })
	return hosts, hostsErr
}

func findHosts() ([]string, error) {
	if env := strings.TrimSpace(os.Getenv("CASSANDRA_HOSTS")); env != "" {
		var out []string
		for _, h := range strings.Split(env, ",") {
			if h = strings.TrimSpace(h); h != "" {
				out = append(out, h)
			}
		}
		return out, nil
	}
	if dockerAnswers() {
		return startContainer()
	}
	return nil, fmt.Errorf("no Cassandra: CASSANDRA_HOSTS is unset and no Docker engine answers; " +
		"run `make cassandra-up` and set CASSANDRA_HOSTS=127.0.0.1:9042 (make test does both)")
}

func dockerAnswers() bool {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return false
		}
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Health(ctx) == nil
}

func startContainer() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        Image,
			ExposedPorts: []string{"9042/tcp"},
			Env:          map[string]string{"MAX_HEAP_SIZE": "1G", "HEAP_NEWSIZE": "256M"},
			Entrypoint:   []string{"bash", "-c", paxosV2},
			WaitingFor:   wait.ForLog("Startup complete").WithStartupTimeout(4 * time.Minute),
		},
		Started: true,
	})
	if err != nil {
		return nil, fmt.Errorf("start %s container: %w", Image, err)
	}
	endpoint, err := c.PortEndpoint(ctx, "9042/tcp", "")
	if err != nil {
		return nil, fmt.Errorf("container endpoint: %w", err)
	}
	return []string{endpoint}, nil
}
