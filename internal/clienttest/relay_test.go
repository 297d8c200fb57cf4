package clienttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// relayKey is the relay key every client presents.
const relayKey = "sk-wr-clienttest-0123456789abcdef0123"

// shapes are the four upstream shapes, each with the upstream model its
// binding names on the mock upstream.
var shapes = []struct {
	shape    wire.Shape
	upstream string
}{
	{wire.ShapeOpenAI, "gpt-4o-mini"},
	{wire.ShapeOpenAIResponses, "gpt-4.1-mini"},
	{wire.ShapeAnthropic, "claude-sonnet-4-5"},
	{wire.ShapeGemini, "gemini-2.5-flash"},
}

// modelName is the Relay model bound to shape.
func modelName(shape wire.Shape) string { return "ct-" + string(shape) }

// relay is an in-process Relay inference handler on a real listener, with
// one model per upstream shape on a mock upstream, and the requests its
// clients sent.
type relay struct {
	URL      string
	Upstream *mockupstream.Server
	rec      *recorder
}

// startRelay starts the mock upstream and Relay in front of it. The mock
// chooses tools as the demo's does (mockupstream.Options.ToolsWhenAsked): a
// tool only when the user turn asks, a read-only one first. Tools named in
// preferTools are moved to the front of every upstream request's tool
// list, which decides between equally fitting ones.
func startRelay(t *testing.T, preferTools ...string) *relay {
	t.Helper()
	var models []catalogModel
	for _, b := range shapes {
		models = append(models, catalogModel{name: modelName(b.shape), kind: "chat", shape: b.shape, upstream: b.upstream})
	}
	return startCatalog(t, mockupstream.New(mockupstream.Options{ToolsWhenAsked: true}), models, preferTools)
}

// catalogModel is a model of the in-process catalog and its one binding.
type catalogModel struct {
	name, kind string
	shape      wire.Shape
	upstream   string
	context    int32
}

// startCatalog starts mock on a listener and Relay in front of it, with
// models bound to it.
func startCatalog(t *testing.T, mock *mockupstream.Server, models []catalogModel, preferTools []string) *relay {
	t.Helper()
	return startCatalogWith(t, mock, models, preferTools, nil, nil)
}

// startCatalogWith is startCatalog with the catalog edited by edit before
// it is built and the inference handler mounted by mount (nil: as it is).
func startCatalogWith(t *testing.T, mock *mockupstream.Server, models []catalogModel, preferTools []string,
	edit func(*snapshot.Data), mount func(inference http.Handler, snap func() *snapshot.Snapshot) http.Handler) *relay {
	t.Helper()
	up := httptest.NewServer(toolsFirst(mock, preferTools))
	t.Cleanup(up.Close)

	policy := &snapshot.Policy{ID: uuid.New(), Slug: "p", AllModels: true, AllHostKeys: true, KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 1}
	team, project, sa := uuid.New(), uuid.New(), uuid.New()
	host := &snapshot.Host{ID: uuid.New(), Slug: "mock", Name: "mock", BaseURL: up.URL, Enabled: true}
	d := &snapshot.Data{
		Teams:           []*snapshot.Team{{ID: team, Slug: "t"}},
		Projects:        []*snapshot.Project{{ID: project, TeamID: team, Slug: "p"}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: sa, ProjectID: project, Slug: "app", PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: uuid.New(), Hash: sha256.Sum256([]byte(relayKey)), DisplayPrefix: relayKey[:10], ProjectID: project, ServiceAccountID: sa}},
		Hosts:           []*snapshot.Host{host},
		HostKeys:        []*snapshot.HostKey{{ID: uuid.New(), HostID: host.ID, Slug: "k", Secret: snapshot.NewSecret("sk-up-clienttest"), SecretVersion: 1, Enabled: true, Usable: true}},
	}
	for _, cm := range models {
		m := &snapshot.Model{ID: uuid.New(), Name: cm.name, Provider: "test", Kind: cm.kind, ContextWindow: int(cm.context), SupportsTools: cm.kind == "chat"}
		d.Models = append(d.Models, m)
		d.Bindings = append(d.Bindings, &snapshot.Binding{ID: uuid.New(), ModelID: m.ID, HostID: host.ID, Shape: cm.shape, UpstreamModel: cm.upstream,
			Enabled: true, Pricing: snapshot.Pricing{Input: 2_500_000, Output: 10_000_000}})
	}
	if edit != nil {
		edit(d)
	}
	snap := snapshot.Build(d, 1, time.Now())
	rec := &recorder{}
	current := func() *snapshot.Snapshot { return snap }
	var h http.Handler = proxy.New(proxy.Config{Snapshot: current, Logger: slog.New(slog.DiscardHandler)})
	if mount != nil {
		h = mount(h, current)
	}
	srv := httptest.NewServer(rec.wrap(h))
	t.Cleanup(srv.Close)
	return &relay{URL: srv.URL, Upstream: mock, rec: rec}
}

// exchange is one request a client sent Relay, without its secrets, and the
// status Relay answered. Recorded to testdata/requests, it is a fixture of
// the replay test.
type exchange struct {
	// Client names the client and its version.
	Client string `json:"client,omitempty"`
	// Model is the Relay model the client was pointed at; the replay puts
	// each binding shape's model in its place, in the path and the body.
	Model string `json:"model,omitempty"`
	// Auth names where the relay key was: "key" for ?key=, else the
	// headers that carried it, comma-separated ("authorization" as a bearer
	// token, "x-api-key", "x-goog-api-key").
	Auth   string            `json:"auth,omitempty"`
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Query  string            `json:"query,omitempty"`
	Header map[string]string `json:"header"`
	Body   json.RawMessage   `json:"body,omitempty"`
	// Status and Error are what Relay answered when the request was
	// recorded (Error: the start of a non-2xx answer); the replay does not
	// compare with them.
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	// Expect is the status class the replay requires through each binding
	// shape: "2xx", or a status such as "400" where a field is semantic and
	// cannot be translated.
	Expect map[string]string `json:"expect,omitempty"`
}

// recorder keeps the requests that pass through it.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
}

// secretHeaders are dropped from recorded requests; secretQuery likewise.
var (
	secretHeaders = map[string]bool{"authorization": true, "x-api-key": true, "x-goog-api-key": true, "cookie": true, "proxy-authorization": true}
	secretQuery   = []string{"key"}
	// transportHeaders are set by whoever sends the request again.
	transportHeaders = map[string]bool{"content-length": true, "connection": true, "accept-encoding": true, "host": true}
)

func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		x := exchange{Method: r.Method, Path: r.URL.Path, Header: map[string]string{}}
		q := r.URL.Query()
		for _, k := range secretQuery {
			if q.Has(k) {
				x.Auth = k
				q.Del(k)
			}
		}
		x.Query = q.Encode()
		var auth []string
		for k, v := range r.Header {
			k = strings.ToLower(k)
			switch {
			case secretHeaders[k]:
				if k != "cookie" && k != "proxy-authorization" {
					auth = append(auth, k)
				}
			case !transportHeaders[k]:
				x.Header[k] = strings.Join(v, ", ")
			}
		}
		if x.Auth == "" {
			slices.Sort(auth)
			x.Auth = strings.Join(auth, ",")
		}
		if len(body) > 0 {
			if json.Valid(body) {
				x.Body = body
			} else {
				x.Body, _ = json.Marshal(string(body))
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		x.Status = sw.status
		if sw.status >= 300 {
			x.Error = sw.head.String()
		}
		rc.mu.Lock()
		rc.seen = append(rc.seen, x)
		rc.mu.Unlock()
	})
}

// exchanges returns the requests recorded so far.
func (rc *recorder) exchanges() []exchange {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]exchange(nil), rc.seen...)
}

// statusWriter notes the status and the first bytes of an error answer.
type statusWriter struct {
	http.ResponseWriter
	status int
	head   bytes.Buffer
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 300 && w.head.Len() < 400 {
		w.head.Write(p[:min(len(p), 400-w.head.Len())])
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// toolsFirst moves the tools named in prefer to the front of each request's
// tool list, in whichever shape it comes (Chat and Responses, Anthropic,
// Gemini functionDeclarations), before the mock upstream sees it.
func toolsFirst(h http.Handler, prefer []string) http.Handler {
	if len(prefer) == 0 {
		return h
	}
	rank := func(name string) int {
		for i, p := range prefer {
			if p == name {
				return i
			}
		}
		return len(prefer)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]json.RawMessage
		if json.Unmarshal(body, &req) == nil && req["tools"] != nil {
			var tools []map[string]json.RawMessage
			if json.Unmarshal(req["tools"], &tools) == nil {
				sortTools(tools, rank)
				req["tools"], _ = json.Marshal(tools)
				body, _ = json.Marshal(req)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}

// sortTools reorders tools (and Gemini's functionDeclarations inside each)
// stably by rank of their names.
func sortTools(tools []map[string]json.RawMessage, rank func(string) int) {
	name := func(t map[string]json.RawMessage) string {
		var n struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		raw, _ := json.Marshal(t)
		_ = json.Unmarshal(raw, &n)
		if n.Name != "" {
			return n.Name
		}
		return n.Function.Name
	}
	for _, t := range tools {
		if raw := t["functionDeclarations"]; raw != nil {
			var decls []map[string]json.RawMessage
			if json.Unmarshal(raw, &decls) == nil {
				stableSort(decls, func(d map[string]json.RawMessage) int { return rank(name(d)) })
				t["functionDeclarations"], _ = json.Marshal(decls)
			}
		}
	}
	stableSort(tools, func(t map[string]json.RawMessage) int { return rank(name(t)) })
}

func stableSort[T any](s []T, key func(T) int) {
	slices.SortStableFunc(s, func(a, b T) int { return key(a) - key(b) })
}
