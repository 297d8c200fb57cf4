package redistest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three masters without replicas, each a
// redis-server of this machine in cluster mode on a free port, the 16384
// slots split evenly between them.
type Cluster struct {
	dir   string
	nodes []*Server
}

// StartCluster starts a Cluster for t, stopped when t ends. Without
// redis-server on PATH it skips t with a note, or fails t when CI is set:
// CI installs redis-server, so a missing one there is a broken runner.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	SkipWithoutRedisServer(t)
	c, err := NewCluster()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// SkipWithoutRedisServer skips t when redis-server is not on PATH, or fails
// it when CI is set.
func SkipWithoutRedisServer(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redistest: redis-server is not on PATH, and CI must run the Redis Cluster tests")
		}
		t.Skip("redistest: SKIPPED — redis-server is not on PATH, so no Redis Cluster (apt-get install redis-server)")
	}
}

// NewCluster starts a Cluster that outlives any one test (a package's
// TestMain shares it); the caller stops it. It fails without redis-server.
func NewCluster() (*Cluster, error) {
	dir, err := os.MkdirTemp("", "redis-cluster-")
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	c := &Cluster{dir: dir}
	if err := c.start(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	return c, nil
}

const clusterSlots = 16384

func (c *Cluster) start() error {
	for i := range 3 {
		nodeDir := filepath.Join(c.dir, strconv.Itoa(i))
		if err := os.Mkdir(nodeDir, 0o755); err != nil {
			return err
		}
		s := &Server{extra: []string{"--cluster-enabled", "yes", "--dir", nodeDir,
			"--cluster-config-file", filepath.Join(nodeDir, "nodes.conf"), "--cluster-node-timeout", "5000"}}
		var err error
		for range 5 { // another process may take the free port first
			if s.port, err = freePort(); err != nil {
				continue
			}
			if err = s.launch(); err == nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		defer clients[i].Close()
	}
	// Each node takes a third of the slots and its own config epoch, then
	// the first meets the others; gossip does the rest.
	for i, cl := range clients {
		lo, hi := i*clusterSlots/len(clients), (i+1)*clusterSlots/len(clients)-1
		if err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER ADDSLOTSRANGE: %w", i, err)
		}
		if err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER SET-CONFIG-EPOCH: %w", i, err)
		}
	}
	for i, n := range c.nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.port)).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER MEET: %w", i+1, err)
		}
	}
	for {
		ready := true
		for _, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil {
				return fmt.Errorf("CLUSTER INFO: %w", err)
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3\r") ||
				!strings.Contains(info, "cluster_slots_ok:16384") {
				ready = false
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the cluster did not reach cluster_state:ok within 30s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Addrs are the masters' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// URL is the cluster URL Relay takes: redis://first?addr=second&addr=third.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	q := url.Values{"addr": addrs[1:]}
	return "redis://" + addrs[0] + "?" + q.Encode()
}

// Stop kills every node and removes their files.
func (c *Cluster) Stop() {
	for _, n := range c.nodes {
		n.kill()
	}
	c.nodes = nil
	_ = os.RemoveAll(c.dir)
}

// Client returns a go-redis cluster client for c, closed when t ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// SharedCluster is the one Redis Cluster of a test binary: started by the
// first test that asks for it, stopped by the package's TestMain (Stop), so
// each package pays the cluster's start once.
type SharedCluster struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Get returns the cluster, starting it on first use; without redis-server
// the test is skipped, or fails when CI is set.
func (s *SharedCluster) Get(t testing.TB) *Cluster {
	t.Helper()
	SkipWithoutRedisServer(t)
	s.once.Do(func() { s.c, s.err = NewCluster() })
	if s.err != nil {
		t.Fatalf("redis cluster: %v", s.err)
	}
	return s.c
}

// Stop stops the cluster if a test started it.
func (s *SharedCluster) Stop() {
	if s.c != nil {
		s.c.Stop()
	}
}
