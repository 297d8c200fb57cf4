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

// TestConsole_UsageTotalsSplitSpendByKind: the usage page's totals show
// batch spend and tool spend apart from model spend, from the rollups the
// writer fills by inbound shape.
func TestConsole_UsageTotalsSplitSpendByKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "viewer")
	// Whole hours well inside the page's last 24 hours: the summary reads
	// them from the rollups.
	at := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	if _, err := b.st.IngestUsageEvents(t.Context(), []store.UsageEvent{
		{RequestID: "batch_split1", CreatedAt: at, Model: "gpt", Status: 200, InboundShape: "batch", Cost: 1_500_000_000},
		{RequestID: "msgbatch_split2", CreatedAt: at.Add(time.Minute), Model: "claude", Status: 200, InboundShape: "message_batch", Cost: 500_000_000},
		{RequestID: "req_mcpsplit", CreatedAt: at.Add(2 * time.Minute), Model: "docs__lookup", Status: 200, InboundShape: "mcp", Cost: 250_000_000},
		{RequestID: "req_chatsplit", CreatedAt: at.Add(3 * time.Minute), Model: "gpt", Status: 200, InboundShape: "openai_chat", Cost: 4_000_000_000},
	}); err != nil {
		t.Fatal(err)
	}
	a := b.signedIn("ada@example.com").get("/usage")
	for label, value := range map[string]string{
		"Spend": "6.25", "Model spend": "4.00", "Batch spend": "2.00 (2 batches)", "Tool spend": "0.250000 (1 tool calls)",
	} {
		card := `<div class="label">` + label + `</div><div class="value">` + value + `</div>`
		if !strings.Contains(a.body, card) {
			t.Errorf("the usage page lacks %q", card)
		}
	}
}
