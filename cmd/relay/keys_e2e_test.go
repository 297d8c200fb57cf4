package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/openapi/client"
)

const e2eAdminToken = "e2e-admin-token-0123456789"

func adminClient(t testing.TB, base string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(base, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+e2eAdminToken)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// status returns the status of GET /v1/models with key on base.
func modelsStatus(t testing.TB, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// eventually polls until the key's status on base is want, returning how long it took.
func eventually(t *testing.T, base, key string, want int) time.Duration {
	t.Helper()
	return poll.Until(t, 10*time.Second, fmt.Sprintf("the key's status on %s is %d", base, want), func() bool {
		return modelsStatus(t, base, key) == want
	})
}

// TestServe_RelayKeyLifecycleAcrossProcesses mints a relay key through the
// control API of one process and uses it on the inference plane of another:
// it works, rotation keeps old and new working through the grace period, and
// a revoke stops it.
func TestServe_RelayKeyLifecycleAcrossProcesses(t *testing.T) {
	db := pgtest.NewDB(t)
	first := startRelay(t, db, true, "RELAY_DEMO=true", "RELAY_ADMIN_TOKEN="+e2eAdminToken)
	second := startRelay(t, db, false, "RELAY_DEMO=false")
	waitReady(t, first.inference)
	waitReady(t, second.inference)
	ctx := context.Background()
	api := adminClient(t, first.control)

	sas, err := api.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{})
	if err != nil || sas.JSON200 == nil || len(sas.JSON200.Items) == 0 {
		t.Fatalf("list service accounts: %v %s", err, sas.Body)
	}
	sa := sas.JSON200.Items[0]
	created, err := api.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: sa.ProjectID, ServiceAccountID: &sa.ID})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create relay key: %v %s", err, created.Body)
	}
	key := created.JSON201.Secret
	t.Logf("minted key usable on the second process after %s", eventually(t, second.inference, key, 200))

	rotated, err := api.RotateRelayKeyWithResponse(ctx, created.JSON201.RelayKey.ID, models.RelayKeyRotate{GraceSeconds: 3600})
	if err != nil || rotated.JSON201 == nil {
		t.Fatalf("rotate: %v %s", err, rotated.Body)
	}
	eventually(t, second.inference, rotated.JSON201.Secret, 200)
	if s := modelsStatus(t, second.inference, key); s != 200 {
		t.Fatalf("old key during the grace period: %d", s)
	}

	revoked, err := api.RevokeRelayKeyWithResponse(ctx, rotated.JSON201.RelayKey.ID)
	if err != nil || revoked.StatusCode() != 200 {
		t.Fatalf("revoke: %v %s", err, revoked.Body)
	}
	t.Logf("revoke effective on the second process after %s", eventually(t, second.inference, rotated.JSON201.Secret, 401))
}
