package controlapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
)

// clock is a settable time for the control API's Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestAdminToken_Expires(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	b := setup(t, func(c *controlapi.Config) { c.Now = clk.now; c.AdminTokenExpires = clk.now().Add(time.Hour) })
	call(b.admin.ListTeamsWithResponse(b.ctx, nil)).want(t, http.StatusOK)
	clk.add(time.Hour)
	e := call(b.admin.ListTeamsWithResponse(b.ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	if !strings.Contains(e.Message, "expired") {
		t.Errorf("message = %q, want it to say the token expired", e.Message)
	}
}

// TestAdminToken_FileRotatesWithoutRestart: a new token in
// RELAY_ADMIN_TOKEN_FILE is taken at once; the old one still works for the
// grace period, then not; each token's writes are audited under its own id;
// an expiry on the file's second line ends its token.
func TestAdminToken_FileRotatesWithoutRestart(t *testing.T) {
	t.Parallel()
	const tokA, tokB, tokC = "first-admin-token-aaaaaaaa", "second-admin-token-bbbbbbbbbb", "third-admin-token-cccccccccccc"
	file := filepath.Join(t.TempDir(), "admin-token")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tokA + "\n")
	clk := &clock{t: time.Now()}
	b := setup(t, func(c *controlapi.Config) {
		c.Now, c.AdminToken, c.AdminTokenFile, c.AdminTokenGrace = clk.now, "", file, 5*time.Minute
	})
	a, bb, cc := b.client(bearer(tokA)), b.client(bearer(tokB)), b.client(bearer(tokC))
	call(a.CreateTeamWithResponse(b.ctx, models.TeamCreate{Slug: "by-a"})).want(t, http.StatusCreated)
	call(bb.ListTeamsWithResponse(b.ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")

	write(tokB + "\n")
	call(bb.CreateTeamWithResponse(b.ctx, models.TeamCreate{Slug: "by-b"})).want(t, http.StatusCreated)
	call(a.ListTeamsWithResponse(b.ctx, nil)).want(t, http.StatusOK) // within the grace period
	clk.add(5 * time.Minute)
	call(a.ListTeamsWithResponse(b.ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(bb.ListTeamsWithResponse(b.ctx, nil)).want(t, http.StatusOK)

	kind := "teams"
	rows := call(bb.ListAuditLogWithResponse(b.ctx, &models.ListAuditLogParams{Kind: &kind})).want(t, http.StatusOK).JSON200.Items
	actors := map[string]string{}
	for _, r := range rows {
		actors[r.Actor] = r.ObjectID
	}
	if len(actors) != 2 || actors[controlapi.AdminTokenActor(tokA)] == "" || actors[controlapi.AdminTokenActor(tokB)] == "" {
		t.Fatalf("audit actors = %v, want one team by each of %s and %s", actors, controlapi.AdminTokenActor(tokA), controlapi.AdminTokenActor(tokB))
	}
	for actor := range actors {
		if strings.Contains(actor, tokA) || strings.Contains(actor, tokB) {
			t.Fatalf("the audit actor %q holds the token", actor)
		}
	}

	write(tokC + "\n" + clk.now().Add(time.Minute).UTC().Format(time.RFC3339) + "\n")
	call(cc.ListTeamsWithResponse(b.ctx, nil)).want(t, http.StatusOK)
	clk.add(2 * time.Minute)
	call(cc.ListTeamsWithResponse(b.ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")

	// A file that cannot be parsed keeps the tokens there were: B is
	// still in its grace period (from C's arrival), C still expired.
	write("short\n")
	call(bb.ListTeamsWithResponse(b.ctx, nil)).want(t, http.StatusOK)
	call(cc.ListTeamsWithResponse(b.ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	if strings.Contains(b.logs.String(), tokB) || strings.Contains(b.logs.String(), tokC) {
		t.Fatal("the log holds a token")
	}
}
