package ui_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/store"
)

// TestConsole_UsageRequestsSayTheirKind: the usage explorer's requests
// mark a finished batch's usage and a tools/call through /mcp apart from
// model calls, with each one's cost.
func TestConsole_UsageRequestsSayTheirKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "viewer")
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	if _, err := b.st.InsertUsageEvents(t.Context(), []store.UsageEvent{
		{RequestID: "batch_kind1", CreatedAt: at, Model: "gpt", Status: 200, InboundShape: "batch", Cost: 1_500_000},
		{RequestID: "req_mcpkind", CreatedAt: at.Add(time.Second), Model: "docs__lookup", Status: 200, InboundShape: "mcp"},
		{RequestID: "req_chatkind", CreatedAt: at.Add(2 * time.Second), Model: "gpt", Status: 200, InboundShape: "openai"},
	}); err != nil {
		t.Fatal(err)
	}
	a := b.signedIn("ada@example.com").get("/usage")
	must(t, a, http.StatusOK, "<th scope=\"col\">Kind</th>", "batch_kind1", "docs__lookup", "0.001500")
	for id, kind := range map[string]string{"batch_kind1": ">batch<", "req_mcpkind": ">tool call<", "req_chatkind": ">model call<"} {
		i := strings.Index(a.body, id+"</bdi></a>")
		if i < 0 {
			t.Fatalf("no row of %s", id)
		}
		rowEnd := strings.Index(a.body[i:], "</tr>")
		if !strings.Contains(a.body[i:i+rowEnd], kind) {
			t.Errorf("%s's row lacks %s: %s", id, kind, a.body[i:i+rowEnd])
		}
	}
}
