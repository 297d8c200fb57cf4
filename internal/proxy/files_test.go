package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Files and batches through openai-go with only the base URL changed: an
// upload on one host key, every later call on that key (from another pod
// too), the other project's 404 on every route, and the ledger event of
// a finished batch at the batch price, once.

const (
	filesSecret1 = "sk-up-files-key-1-secret"
	filesSecret2 = "sk-up-files-key-2-secret"
)

type filesFixture struct {
	*fixture
	binding *snapshot.Binding
	project snapshot.ID
}

func newFilesFixture(t *testing.T) *filesFixture {
	t.Helper()
	f := newFixture(t)
	f.cfg.Objects = objects.NewMemory(objects.Options{Now: f.clock.Now})
	oa := f.host("openai")
	f.key(oa, "oa-1", filesSecret1)
	f.key(oa, "oa-2", filesSecret2)
	m := f.model("gpt-test", true)
	m.MaxOutputTokens = 1000
	b := f.bind(m, oa, wire.ShapeOpenAI, "gpt-4o-mini-cached")
	b.Pricing = snapshot.Pricing{Input: 2_000_000, CachedInput: 1_000_000, Output: 8_000_000, Reasoning: 8_000_000}
	team := f.data.Teams[0]
	p2 := &snapshot.Project{ID: f.id(), TeamID: team.ID, Slug: "other"}
	sa2 := &snapshot.ServiceAccount{ID: f.id(), ProjectID: p2.ID, Slug: "other-app", PolicyID: f.policy.ID}
	f.data.Projects = append(f.data.Projects, p2)
	f.data.ServiceAccounts = append(f.data.ServiceAccounts, sa2)
	f.data.RelayKeys = append(f.data.RelayKeys, &snapshot.RelayKey{ID: f.id(), Hash: sha256.Sum256([]byte(otherKey)), DisplayPrefix: otherKey[:10], ProjectID: p2.ID, ServiceAccountID: sa2.ID})
	f.secrets = append(f.secrets, otherKey)
	return &filesFixture{fixture: f, binding: b, project: f.data.Projects[0].ID}
}

func batchLines(model string, maxTokens int, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`{"custom_id":"req-` + string(rune('a'+i)) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"` + model +
			`","messages":[{"role":"user","content":"line ` + string(rune('a'+i)) + `"}],"max_tokens":` + strconv.Itoa(maxTokens) + "}}\n")
	}
	return b.String()
}

func upload(t *testing.T, c *openai.Client, content string) *openai.FileObject {
	t.Helper()
	fo, err := c.Files.New(t.Context(), openai.FileNewParams{File: openai.File(strings.NewReader(content), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	return fo
}

func newBatch(c *openai.Client, t *testing.T, fileID string) (*openai.Batch, error) {
	return c.Batches.New(t.Context(), openai.BatchNewParams{InputFileID: fileID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
}

// notFound checks an SDK error is Relay's 404 for an id the caller does
// not own, the one a missing id gets (docs/errors.md).
func notFound(t *testing.T, what string, err error) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || ae.Type != "not_found_error" ||
		!(strings.HasPrefix(ae.Message, "No such File object: ") || strings.HasPrefix(ae.Message, "No batch found with id ")) {
		t.Errorf("%s: %v, want 404 not_found_error", what, err)
	}
}

func TestObjects_FilesAndBatchesThroughOpenAISDK(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	f.start()
	c, other := f.openai(), f.openai(oaopt.WithAPIKey(otherKey))
	ctx := t.Context()

	in := batchLines("gpt-test", 50, 3)
	file := upload(t, c, in)
	up := f.waitFor(func(r mockupstream.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/files")
	})
	if got := up.Header.Get("Authorization"); got != "Bearer "+filesSecret1 {
		t.Fatalf("the upload went with %q, want the first host key", got)
	}
	resp, err := c.Files.Content(ctx, file.ID)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(content), `"gpt-test"`) || strings.Count(string(content), `"model":"gpt-4o-mini-cached"`) != 3 {
		t.Fatalf("the upstream holds %s; want every line's model the binding's upstream model", content)
	}
	if got, err := c.Files.Get(ctx, file.ID); err != nil || got.ID != file.ID || got.Purpose != "batch" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if l, err := c.Files.List(ctx, openai.FileListParams{}); err != nil || len(l.Data) != 1 || l.Data[0].ID != file.ID {
		t.Fatalf("list = %+v, %v", l, err)
	}

	// The other project: every route is 404, its lists are empty.
	_, err = other.Files.Get(ctx, file.ID)
	notFound(t, "other: file get", err)
	_, err = other.Files.Content(ctx, file.ID)
	notFound(t, "other: file content", err)
	_, err = other.Files.Delete(ctx, file.ID)
	notFound(t, "other: file delete", err)
	_, err = newBatch(other, t, file.ID)
	notFound(t, "other: batch on the file", err)
	if l, err := other.Files.List(ctx, openai.FileListParams{}); err != nil || len(l.Data) != 0 {
		t.Errorf("other: file list = %+v, %v", l, err)
	}

	batch, err := newBatch(c, t, file.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Batches.Get(ctx, batch.ID)
	notFound(t, "other: batch get", err)
	_, err = other.Batches.Cancel(ctx, batch.ID)
	notFound(t, "other: batch cancel", err)
	if l, err := other.Batches.List(ctx, openai.BatchListParams{}); err != nil || len(l.Data) != 0 {
		t.Errorf("other: batch list = %+v, %v", l, err)
	}
	// A second pod shares the index; its snapshot puts the other key
	// first. Calls on the batch still go to the key that made it (the
	// mock keeps objects per key: another would answer 404).
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
	c2 := f.openai(oaopt.WithBaseURL(pod2.URL + "/v1"))
	for range 5 {
		if batch, err = c2.Batches.Get(ctx, batch.ID); err != nil {
			t.Fatal(err)
		}
		if batch.Status == openai.BatchStatusCompleted {
			break
		}
	}
	if batch.Status != openai.BatchStatusCompleted || batch.OutputFileID == "" || batch.Usage.InputTokens == 0 {
		t.Fatalf("batch = %+v", batch)
	}

	rec := f.rec.next(t)
	u := wire.Usage{Input: batch.Usage.InputTokens, CacheRead: batch.Usage.InputTokensDetails.CachedTokens, Output: batch.Usage.OutputTokens}
	if !rec.Batch || rec.RequestID != batch.ID || rec.Inbound != "batch" || rec.ProjectID != f.project || rec.BindingID != f.binding.ID || rec.Model != "gpt-test" || rec.Usage != u {
		t.Fatalf("record = %+v, want the batch's usage %+v", rec, u)
	}
	if u.CacheRead == 0 {
		t.Fatal("the mock reported no cached tokens: the test would not see them priced")
	}
	r := pricing.RatesFor(&f.binding.Pricing, u.Input)
	if got, full := pricing.BatchCostAt(r, rec.Usage), pricing.CostAt(r, rec.Usage); got*2 < full-1 || got*2 > full+1 || got == 0 {
		t.Fatalf("batch cost %d, full price %d", got, full)
	}
	// Seen again, from either pod, and listed: recorded once.
	if _, err := c.Batches.Get(ctx, batch.ID); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Batches.List(ctx, openai.BatchListParams{}); err != nil || len(l.Data) != 1 || l.Data[0].Status != openai.BatchStatusCompleted {
		t.Fatalf("batch list = %+v, %v", l, err)
	}
	select {
	case rec := <-f.rec.ch:
		t.Fatalf("a second record: %+v", rec)
	default:
	}

	// The output file is the project's own.
	resp, err = c.Files.Content(ctx, batch.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Count(out, []byte(`"status_code":200`)) != 3 {
		t.Fatalf("output = %s", out)
	}
	_, err = other.Files.Content(ctx, batch.OutputFileID)
	notFound(t, "other: output content", err)

	// Cancel: the upstream's lifecycle, through Relay.
	b2, err := newBatch(c, t, file.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b2, err = c.Batches.Cancel(ctx, b2.ID); err != nil || b2.Status != openai.BatchStatusCancelling {
		t.Fatalf("cancel = %+v, %v", b2, err)
	}
	if b2, err = c.Batches.Get(ctx, b2.ID); err != nil || b2.Status != openai.BatchStatusCancelled {
		t.Fatalf("after cancel = %+v, %v", b2, err)
	}

	if d, err := c2.Files.Delete(ctx, file.ID); err != nil || !d.Deleted {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	_, err = c.Files.Get(ctx, file.ID)
	notFound(t, "get after delete", err)
}

// Refusals: bad batch files, another model than the policy grants, a
// batch its budget cannot cover (the estimate named), wrong methods.
func TestObjects_Refusals(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	f.model("ungranted", false)
	lim := ratelimit.New(ratelimit.Options{FixedEstimates: true})
	f.cfg.Limiter = lim
	// $0.001 a day: 3 lines × 1000 output tokens at $4/M (the batch
	// price) are $0.012.
	f.data.Budgets = append(f.data.Budgets, &snapshot.Budget{ID: f.id(), ProjectID: f.project, Period: "day", Amount: 1000})
	f.start()
	c := f.openai()
	ctx := t.Context()

	for name, content := range map[string]string{
		"not json":        "not json\n",
		"no custom_id":    `{"method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-test"}}` + "\n",
		"two urls":        batchLines("gpt-test", 5, 1) + strings.Replace(batchLines("gpt-test", 5, 1), "/v1/chat/completions", "/v1/embeddings", 1),
		"two models":      batchLines("gpt-test", 5, 1) + batchLines("other", 5, 1),
		"duplicate":       `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-test","model":"x"}}` + "\n",
		"unknown model":   batchLines("nope", 5, 1),
		"ungranted":       batchLines("ungranted", 5, 1),
		"empty":           "\n\n",
		"bad url":         strings.Replace(batchLines("gpt-test", 5, 1), "/v1/chat/completions", "/v1/images/generations", 1),
		"wrong method":    strings.Replace(batchLines("gpt-test", 5, 1), `"POST"`, `"GET"`, 1),
		"body not object": `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":[1]}` + "\n",
	} {
		_, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(content), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode/100 != 4 {
			t.Errorf("%s: %v, want a 4xx", name, err)
		}
	}

	file := upload(t, c, batchLines("gpt-test", 1000, 3))
	_, err := newBatch(c, t, file.ID)
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || ae.Code != "budget_exceeded" || !strings.Contains(ae.Message, "3000 output tokens") {
		t.Fatalf("over budget: %v, want 429 budget_exceeded naming the estimate", err)
	}
	for _, r := range f.requests() {
		if strings.HasSuffix(r.Path, "/batches") {
			t.Fatalf("a refused batch reached the upstream: %+v", r)
		}
	}
	// A small one fits.
	small := upload(t, c, batchLines("gpt-test", 10, 1))
	if _, err := newBatch(c, t, small.ID); err != nil {
		t.Fatalf("a batch within budget: %v", err)
	}
	// A file not uploaded for batches cannot start one.
	plain, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("hello"), "a.txt", "text/plain"), Purpose: openai.FilePurposeUserData})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newBatch(c, t, plain.ID); !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		t.Errorf("batch on a user_data file: %v, want 400", err)
	}

	for _, tc := range []struct{ method, path string }{
		{http.MethodPut, "/v1/files"},
		{http.MethodPost, "/v1/files/" + file.ID},
		{http.MethodDelete, "/v1/batches/x"},
		{http.MethodGet, "/v1/batches/x/cancel"},
	} {
		if resp, body := f.do(tc.method, tc.path, "", nil); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s = %d %s, want 405", tc.method, tc.path, resp.StatusCode, body)
		}
	}
	if resp, body := f.do(http.MethodGet, "/v1/files/"+file.ID+"/nope", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown sub-resource = %d %s", resp.StatusCode, body)
	}
	if resp, body := f.do(http.MethodGet, "/v1/files", "", map[string]string{"Authorization": ""}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key = %d %s", resp.StatusCode, body)
	}
	if resp, body := f.post("/v1/files", `{"purpose":"batch"}`, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a JSON upload = %d %s", resp.StatusCode, body)
	}
	if resp, body := f.post("/v1/batches", `{"input_file_id":1}`, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad batch body = %d %s", resp.StatusCode, body)
	}
}

// Lists page newest first by default and oldest first with order=asc, as
// OpenAI documents; after and limit work both ways.
func TestObjects_ListOrder(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	f.start()
	c := f.openai()
	ctx := t.Context()
	var made []string
	for i := range 3 {
		fo, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("file "+strconv.Itoa(i)), "a.txt", "text/plain"), Purpose: openai.FilePurposeUserData})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, fo.ID)
	}
	list := func(order openai.FileListParamsOrder) []string {
		var got []string
		p := openai.FileListParams{Limit: openai.Int(2), Order: order}
		for range 4 {
			l, err := c.Files.List(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range l.Data {
				got = append(got, d.ID)
			}
			if !l.HasMore {
				break
			}
			p.After = openai.String(l.Data[len(l.Data)-1].ID)
		}
		return got
	}
	desc, asc := list(openai.FileListParamsOrderDesc), list(openai.FileListParamsOrderAsc)
	rev := slices.Clone(asc)
	slices.Reverse(rev)
	sorted, want := slices.Clone(asc), slices.Clone(made)
	slices.Sort(sorted)
	slices.Sort(want)
	if len(desc) != 3 || !slices.Equal(desc, rev) || !slices.Equal(sorted, want) {
		t.Fatalf("desc %v, asc %v, made %v", desc, asc, made)
	}
	if resp, body := f.do(http.MethodGet, "/v1/files?order=sideways", "", nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"order"`) {
		t.Errorf("order=sideways = %d %s", resp.StatusCode, body)
	}
}
