package ratelimit

import (
	"os"
	"testing"

	"github.com/relay-llm/relay/internal/redistest"
)

// theCluster is the package's 3-master Redis Cluster, started by the first
// test that asks for it and stopped by TestMain: the limits, pacing and
// budget suites run on it as their "redis-cluster" backend, each test under
// its own prefix, as on the single Redis.
var theCluster redistest.SharedCluster

func TestMain(m *testing.M) {
	code := m.Run()
	theCluster.Stop()
	os.Exit(code)
}

// clusterURL is the cluster's URL (redis://a?addr=b&addr=c); without
// redis-server the test is skipped, or fails when CI is set.
func clusterURL(t testing.TB) string {
	t.Helper()
	return theCluster.Get(t).URL()
}
