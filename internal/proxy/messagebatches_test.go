package proxy_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Anthropic's Message Batches through anthropic-sdk-go with only the base
// URL changed: made on one host key and served by it from another pod,
// another project's 404 on every route, metered once at the batch price
// when it ends and charged to the budget.

const (
	msgBatchSecret1 = "sk-ant-up-batches-key-1"
	msgBatchSecret2 = "sk-ant-up-batches-key-2"
)

type msgBatchFixture struct {
	*fixture
	binding *snapshot.Binding
	budget  *snapshot.Budget
	limiter *ratelimit.Limiter
	project snapshot.ID
}

func newMsgBatchFixture(t *testing.T) *msgBatchFixture {
	t.Helper()
	f := newFixture(t)
	f.cfg.Objects = objects.NewMemory(objects.Options{Now: f.clock.Now})
	lim := ratelimit.New(ratelimit.Options{FixedEstimates: true})
	f.cfg.Limiter = lim
	an := f.host("anthropic")
	f.key(an, "an-1", msgBatchSecret1)
	f.key(an, "an-2", msgBatchSecret2)
	m := f.model("claude-test", true)
	b := f.bind(m, an, wire.ShapeAnthropic, "claude-sonnet-cached-cache-write")
	b.Pricing = snapshot.Pricing{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000, Reasoning: 15_000_000}
	team := f.data.Teams[0]
	p2 := &snapshot.Project{ID: f.id(), TeamID: team.ID, Slug: "other"}
	sa2 := &snapshot.ServiceAccount{ID: f.id(), ProjectID: p2.ID, Slug: "other-app", PolicyID: f.policy.ID}
	f.data.Projects = append(f.data.Projects, p2)
	f.data.ServiceAccounts = append(f.data.ServiceAccounts, sa2)
	f.data.RelayKeys = append(f.data.RelayKeys, &snapshot.RelayKey{ID: f.id(), Hash: sha256.Sum256([]byte(otherKey)), DisplayPrefix: otherKey[:10], ProjectID: p2.ID, ServiceAccountID: sa2.ID})
	f.secrets = append(f.secrets, otherKey)
	project := f.data.Projects[0].ID
	budget := &snapshot.Budget{ID: f.id(), ProjectID: project, Period: "day", Amount: 1_000_000_000}
	f.data.Budgets = append(f.data.Budgets, budget)
	return &msgBatchFixture{fixture: f, binding: b, budget: budget, limiter: lim, project: project}
}

func msgBatchRequests(model string, n int) []anthropic.MessageBatchNewParamsRequest {
	rs := make([]anthropic.MessageBatchNewParamsRequest, n)
	for i := range rs {
		rs[i] = anthropic.MessageBatchNewParamsRequest{CustomID: "req-" + string(rune('a'+i)), Params: anthropic.MessageBatchNewParamsRequestParams{
			Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("line " + string(rune('a'+i))))},
		}}
	}
	return rs
}

// msgBatchNotFound checks an SDK error is the 404 a missing id gets.
func msgBatchNotFound(t *testing.T, what string, err error) {
	t.Helper()
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || !strings.Contains(ae.RawJSON(), `"not_found_error"`) ||
		!strings.Contains(ae.RawJSON(), "No message batch found with id") {
		t.Errorf("%s: %v, want 404 not_found_error", what, err)
	}
}

func TestMessageBatches_ThroughAnthropicSDK(t *testing.T) {
	t.Parallel()
	f := newMsgBatchFixture(t)
	f.start()
	c, other := f.anthropic(), f.anthropic(anthopt.WithAPIKey(otherKey))
	ctx := t.Context()

	batch, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: msgBatchRequests("claude-test", 3)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(batch.ID, "msgbatch_01") || batch.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress || batch.RequestCounts.Processing != 3 {
		t.Fatalf("created = %+v", batch)
	}
	up := f.waitFor(func(r mockupstream.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/messages/batches")
	})
	if got := up.Header.Get("X-Api-Key"); got != msgBatchSecret1 {
		t.Fatalf("the batch went with %q, want the first host key", got)
	}

	// The other project: every route is 404, its list is empty.
	_, err = other.Messages.Batches.Get(ctx, batch.ID, anthropic.MessageBatchGetParams{})
	msgBatchNotFound(t, "other: get", err)
	_, err = other.Messages.Batches.Cancel(ctx, batch.ID, anthropic.MessageBatchCancelParams{})
	msgBatchNotFound(t, "other: cancel", err)
	_, err = other.Messages.Batches.Delete(ctx, batch.ID, anthropic.MessageBatchDeleteParams{})
	msgBatchNotFound(t, "other: delete", err)
	s := other.Messages.Batches.ResultsStreaming(ctx, batch.ID, anthropic.MessageBatchResultsParams{})
	for s.Next() {
	}
	msgBatchNotFound(t, "other: results", s.Err())
	if l, err := other.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(l.Data) != 0 {
		t.Errorf("other: list = %+v, %v", l, err)
	}
	if l, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(l.Data) != 1 || l.Data[0].ID != batch.ID {
		t.Fatalf("list = %+v, %v", l, err)
	}

	// A second pod shares the index; its snapshot puts the other key
	// first. Calls on the batch still go to the key that made it (the
	// mock keeps batches per key: another would answer 404).
	swapped := f.data
	swapped.HostKeys = append([]*snapshot.HostKey(nil), f.data.HostKeys...)
	k1, k2 := *swapped.HostKeys[0], *swapped.HostKeys[1]
	k1.Position, k2.Position = 1, 0
	swapped.HostKeys[0], swapped.HostKeys[1] = &k2, &k1
	snap2 := snapshot.Build(&swapped, 2, f.clock.Now())
	cfg := f.cfg
	cfg.Snapshot = func() *snapshot.Snapshot { return snap2 }
	pod2 := httptest.NewServer(proxy.New(cfg))
	t.Cleanup(pod2.Close)
	c2 := f.anthropic(anthopt.WithBaseURL(pod2.URL))
	got, err := c2.Messages.Batches.Get(ctx, batch.ID, anthropic.MessageBatchGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || got.RequestCounts.Succeeded != 3 {
		t.Fatalf("batch = %+v", got)
	}
	if want := pod2.URL + "/v1/messages/batches/" + batch.ID + "/results"; got.ResultsURL != want {
		t.Errorf("results_url = %q, want Relay's %q", got.ResultsURL, want)
	}

	// The results, summed as the ledger should have them.
	var u wire.Usage
	s = c.Messages.Batches.ResultsStreaming(ctx, batch.ID, anthropic.MessageBatchResultsParams{})
	n := 0
	for s.Next() {
		r := s.Current()
		if r.Result.Type != "succeeded" || !strings.HasPrefix(r.CustomID, "req-") {
			t.Fatalf("result = %+v", r)
		}
		n++
		mu := r.Result.Message.Usage
		u.Input += mu.InputTokens + mu.CacheReadInputTokens + mu.CacheCreationInputTokens
		u.CacheRead += mu.CacheReadInputTokens
		u.CacheWrite += mu.CacheCreationInputTokens
		u.Output += mu.OutputTokens
	}
	if s.Err() != nil || n != 3 {
		t.Fatalf("results: %d, %v", n, s.Err())
	}
	if u.CacheRead == 0 || u.CacheWrite == 0 {
		t.Fatal("the mock reported no cached tokens: the test would not see them priced")
	}
	rec := f.rec.next(t)
	if !rec.Batch || rec.RequestID != batch.ID || rec.Inbound != "message_batch" || rec.ProjectID != f.project || rec.BindingID != f.binding.ID ||
		rec.Model != "claude-test" || rec.Usage != u || rec.Upstream != wire.ShapeAnthropic {
		t.Fatalf("record = %+v, want the batch's usage %+v", rec, u)
	}
	r := pricing.RatesFor(&f.binding.Pricing, u.Input)
	cost, full := pricing.BatchCostAt(r, u), pricing.CostAt(r, u)
	if cost*2 < full-1 || cost*2 > full+1 || cost == 0 {
		t.Fatalf("batch cost %d, full price %d", cost, full)
	}
	if err := f.limiter.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if spent, err := f.limiter.Spent(ctx, f.budget); err != nil || spent != pricing.BatchMicros(&f.binding.Pricing, u) {
		t.Fatalf("the budget has %d micros spent (%v), want the batch's cost %d", spent, err, pricing.BatchMicros(&f.binding.Pricing, u))
	}
	// Seen again, from either pod, listed, its results read: recorded once.
	if _, err := c.Messages.Batches.Get(ctx, batch.ID, anthropic.MessageBatchGetParams{}); err != nil {
		t.Fatal(err)
	}
	if l, err := c2.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(l.Data) != 1 || l.Data[0].ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
		t.Fatalf("list = %+v, %v", l, err)
	}
	select {
	case rec := <-f.rec.ch:
		t.Fatalf("a second record: %+v", rec)
	default:
	}

	// Cancel, then delete, through Relay.
	b2, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: msgBatchRequests("claude-test", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if b2, err = c.Messages.Batches.Cancel(ctx, b2.ID, anthropic.MessageBatchCancelParams{}); err != nil || b2.ProcessingStatus != anthropic.MessageBatchProcessingStatusCanceling {
		t.Fatalf("cancel = %+v, %v", b2, err)
	}
	if b2, err = c.Messages.Batches.Get(ctx, b2.ID, anthropic.MessageBatchGetParams{}); err != nil || b2.RequestCounts.Canceled != 2 {
		t.Fatalf("after cancel = %+v, %v", b2, err)
	}
	if l, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1)}); err != nil || len(l.Data) != 1 || l.Data[0].ID != b2.ID || !l.HasMore {
		t.Fatalf("a page of one = %+v, %v", l, err)
	} else if l, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{AfterID: anthropic.String(b2.ID)}); err != nil || len(l.Data) != 1 || l.Data[0].ID != batch.ID {
		t.Fatalf("the next page = %+v, %v", l, err)
	} else if l, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{BeforeID: anthropic.String(batch.ID)}); err != nil || len(l.Data) != 1 || l.Data[0].ID != b2.ID {
		t.Fatalf("the page before = %+v, %v", l, err)
	}
	if d, err := c.Messages.Batches.Delete(ctx, b2.ID, anthropic.MessageBatchDeleteParams{}); err != nil || d.ID != b2.ID {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	_, err = c.Messages.Batches.Get(ctx, b2.ID, anthropic.MessageBatchGetParams{})
	msgBatchNotFound(t, "get after delete", err)
}

// Refusals in Anthropic's shape: mixed or ungranted models, a batch over
// budget (the estimate named), a bad body.
func TestMessageBatches_Refusals(t *testing.T) {
	t.Parallel()
	f := newMsgBatchFixture(t)
	f.budget.Amount = 1000 // $0.001: 3 × 64 output tokens at $7.50/M are $0.00144
	f.model("ungranted", false)
	f.start()
	c := f.anthropic()
	ctx := t.Context()
	for name, rs := range map[string][]anthropic.MessageBatchNewParamsRequest{
		"two models": append(msgBatchRequests("claude-test", 1), msgBatchRequests("gpt-other", 1)...),
		"ungranted":  msgBatchRequests("ungranted", 1),
		"unknown":    msgBatchRequests("nope", 1),
	} {
		_, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: rs})
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode/100 != 4 || !strings.Contains(ae.RawJSON(), `"type":"error"`) {
			t.Errorf("%s: %v, want a 4xx in Anthropic's shape", name, err)
		}
	}
	_, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: msgBatchRequests("claude-test", 3)})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || !strings.Contains(ae.RawJSON(), "192 output tokens") {
		t.Fatalf("over budget: %v, want 429 naming the estimate", err)
	}
	for _, r := range f.requests() {
		if strings.Contains(r.Path, "/messages/batches") {
			t.Fatalf("a refused batch reached the upstream: %+v", r)
		}
	}
	for _, body := range []string{`{"requests":[]}`, `{"requests":[{"custom_id":"a","params":{"model":"claude-test","model":"x"}}]}`, `[1]`} {
		if resp, got := f.post("/v1/messages/batches", body, map[string]string{"anthropic-version": "2023-06-01"}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, `"invalid_request_error"`) {
			t.Errorf("%s = %d %s", body, resp.StatusCode, got)
		}
	}
}
