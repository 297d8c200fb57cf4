package main

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/pgtest"
)

// BenchmarkWriteToPropagation mints relay keys through one process's control
// API and times each until a second process's inference plane accepts it:
// control write → NOTIFY → debounce → copy-on-write rebuild → swap. It
// reports p50/p99 per write. The debounce is RELAY_SNAPSHOT_DEBOUNCE_MEASURE
// (default 100ms; production's default is 1s).
//
//	go test -run '^$' -bench WriteToPropagation -benchtime 200x ./cmd/relay/
func BenchmarkWriteToPropagation(b *testing.B) {
	debounce := os.Getenv("RELAY_SNAPSHOT_DEBOUNCE_MEASURE")
	if debounce == "" {
		debounce = "100ms"
	}
	db := pgtest.NewDB(b)
	first := startRelay(b, db, true, "RELAY_DEMO=true", "RELAY_ADMIN_TOKEN="+e2eAdminToken, "RELAY_SNAPSHOT_DEBOUNCE="+debounce)
	second := startRelay(b, db, false, "RELAY_DEMO=false", "RELAY_SNAPSHOT_DEBOUNCE="+debounce)
	waitReady(b, first.inference)
	waitReady(b, second.inference)
	ctx := context.Background()
	api := adminClient(b, first.control)
	sas, err := api.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{})
	if err != nil || sas.JSON200 == nil {
		b.Fatal(err)
	}
	sa := sas.JSON200.Items[0]
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		created, err := api.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: sa.ProjectID, ServiceAccountID: &sa.ID})
		if err != nil || created.JSON201 == nil {
			b.Fatalf("create: %v", err)
		}
		for modelsStatus(b, second.inference, created.JSON201.Secret) != 200 {
			if time.Since(start) > 10*time.Second {
				b.Fatal("not propagated within 10s")
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
