package mcpgw_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/usage"
)

// A server's price per call counts against the caller's budgets through
// the same limiter as model spend, exactly across pods: 30 concurrent
// calls over 3 gateways sharing Redis, against a project budget worth 7
// calls, admit exactly 7 (the server sees 7); the others, and the next
// call, are refused in MCP's error shape (a JSON-RPC error naming the
// budget), and each admitted call's usage event costs exactly the price.
func TestGateway_CallPriceCountsAgainstBudgets(t *testing.T) {
	s := newSetup(t)
	const price = 2500 // micro-units: $0.0025 a call
	s.server.CallPrice = price
	s.data.Budgets = []*snapshot.Budget{{ID: uuid.New(), ProjectID: s.data.Projects[0].ID, Period: "day", Amount: 7 * price}}
	s.snap.Store(snapshot.Build(s.data, s.snap.Load().Version()+1, time.Now()))
	pods := []string{s.relay, s.gateway(t), s.gateway(t)}
	var sessions []*mcp.ClientSession
	for i := range 30 {
		sessions = append(sessions, agent(t, pods[i%3], "/mcp", s.granted))
	}
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for _, cs := range sessions {
		wg.Go(func() {
			_, err := call(cs, "tools__echo")
			switch {
			case err == nil:
				ok.Add(1)
			case rpcCode(err) == -32030 && strings.Contains(err.Error(), "budget"):
				refused.Add(1)
			default:
				t.Errorf("call: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 7 || refused.Load() != 23 || s.mock.calls.Load() != 7 {
		t.Fatalf("admitted %d, refused %d, server saw %d; want 7, 23, 7", ok.Load(), refused.Load(), s.mock.calls.Load())
	}
	_, err := call(sessions[0], "tools__echo")
	if rpcCode(err) != -32030 || !strings.Contains(err.Error(), "daily budget of this project is spent") {
		t.Fatalf("a call on a spent budget: %v, want the budget's JSON-RPC error", err)
	}
	// The ledger: each admitted call costs exactly its price, the refused
	// ones nothing.
	var cost, paid, budget int64
	for _, rec := range s.rec.all() {
		ev := usage.NewEvent(&rec, s.snap.Load())
		switch rec.ErrorKind {
		case "":
			paid++
			cost += ev.Cost
		case "budget_exceeded":
			budget++
			if ev.Cost != 0 || rec.Status != 429 {
				t.Errorf("a refused call recorded status %d cost %d, want 429 and 0", rec.Status, ev.Cost)
			}
		default:
			t.Errorf("unexpected record %+v", rec)
		}
	}
	if paid != 7 || budget != 24 || cost != 7*price*1000 {
		t.Fatalf("ledger: %d paid calls costing %d nano-units, %d refused; want 7 costing %d, 24 refused", paid, cost, budget, 7*price*1000)
	}
}

// A server without a price makes no budget refuse its calls: a spent
// budget does not hold a free tool.
func TestGateway_FreeCallsIgnoreBudgets(t *testing.T) {
	s := newSetup(t)
	s.data.Budgets = []*snapshot.Budget{{ID: uuid.New(), ProjectID: s.data.Projects[0].ID, Period: "day", Amount: 0}}
	s.snap.Store(snapshot.Build(s.data, s.snap.Load().Version()+1, time.Now()))
	cs := agent(t, s.relay, "/mcp", s.granted)
	for i := range 3 {
		if _, err := call(cs, "tools__echo"); err != nil {
			t.Fatalf("free call %d: %v", i, err)
		}
	}
	for _, rec := range s.rec.all() {
		if ev := usage.NewEvent(&rec, s.snap.Load()); ev.Cost != 0 {
			t.Fatalf("a free call cost %d", ev.Cost)
		}
	}
}

// A tool's own price overrides its server's and counts against budgets
// through the same limiter: with echo at 3000 (by its name) and the
// server's other tools at 500, a budget of 10000 admits exactly 3 echo
// calls (9000) and then 2 fail calls (1000) and no more; each admitted
// call's ledger cost is its tool's price.
func TestGateway_ToolPriceOverridesServerPrice(t *testing.T) {
	s := newSetup(t)
	s.server.CallPrice = 500
	s.server.ToolPrices = []snapshot.MCPToolPrice{{Pattern: "ec*", Price: 1}, {Pattern: "echo", Price: 3000}}
	snapshot.SortToolPrices(s.server.ToolPrices)
	s.data.Budgets = []*snapshot.Budget{{ID: uuid.New(), ProjectID: s.data.Projects[0].ID, Period: "day", Amount: 10000}}
	s.snap.Store(snapshot.Build(s.data, s.snap.Load().Version()+1, time.Now()))
	cs := agent(t, s.relay, "/mcp", s.granted)
	admitted := 0
	for range 6 {
		if _, err := call(cs, "tools__echo"); err == nil {
			admitted++
		} else if rpcCode(err) != -32030 || !strings.Contains(err.Error(), "costs 3000 micro-units") {
			t.Fatalf("echo: %v, want the budget's refusal naming the tool's price", err)
		}
	}
	if admitted != 3 {
		t.Fatalf("a budget of 10000 admitted %d echo calls at 3000, want 3", admitted)
	}
	admitted = 0
	for range 4 {
		if res, err := call(cs, "tools__fail"); err == nil && res.IsError {
			admitted++
		}
	}
	if admitted != 2 {
		t.Fatalf("the 1000 left admitted %d calls of the server's 500, want 2", admitted)
	}
	var cost int64
	for _, rec := range s.rec.all() {
		cost += usage.NewEvent(&rec, s.snap.Load()).Cost
	}
	if cost != (3*3000+2*500)*1000 {
		t.Fatalf("ledger cost %d nano-units, want %d", cost, (3*3000+2*500)*1000)
	}
}

// PriceOf: a tool's name first, then the longest matching glob, then the
// server's price.
func TestMCPServer_PriceOf(t *testing.T) {
	m := &snapshot.MCPServer{CallPrice: 7, ToolPrices: []snapshot.MCPToolPrice{{Pattern: "*", Price: 1}, {Pattern: "get_*", Price: 2}, {Pattern: "get_issue", Price: 3}}}
	snapshot.SortToolPrices(m.ToolPrices)
	for tool, want := range map[string]int64{"get_issue": 3, "get_repo": 2, "search": 1} {
		if got := m.PriceOf(tool); got != want {
			t.Errorf("PriceOf(%q) = %d, want %d", tool, got, want)
		}
	}
	if got := (&snapshot.MCPServer{CallPrice: 7}).PriceOf("x"); got != 7 {
		t.Errorf("without tool prices: %d, want 7", got)
	}
}
