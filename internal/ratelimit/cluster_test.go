package ratelimit

import (
	"os"
	"sync"
	"testing"

	"github.com/relay-llm/relay/internal/redistest"
)

// theCluster is the package's 3-master Redis Cluster, started by the first
// test that asks for it and stopped by TestMain: the limits, pacing and
// budget suites run on it as their "redis-cluster" backend, each test under
// its own prefix, as on the single Redis.
var theCluster struct {
	once sync.Once
	c    *redistest.Cluster
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theCluster.c != nil {
		theCluster.c.Stop()
	}
	os.Exit(code)
}

// clusterURL is the cluster's URL (redis://a?addr=b&addr=c); without
// redis-server the test is skipped, or fails when CI is set.
func clusterURL(t testing.TB) string {
	t.Helper()
	redistest.SkipWithoutRedisServer(t)
	theCluster.once.Do(func() { theCluster.c, theCluster.err = redistest.NewCluster() })
	if theCluster.err != nil {
		t.Fatalf("redis cluster: %v", theCluster.err)
	}
	return theCluster.c.URL()
}
