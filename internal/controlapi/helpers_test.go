package controlapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/bridge"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/client"
	"github.com/relay-llm/relay/openapi/nullable"
)

const adminToken = "test-admin-token-0123456789"

// bundle is what a test gets from setup: a running control API over its own
// database, an admin client, the captured log and every response body.
type bundle struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	srv   *httptest.Server
	admin *client.ClientWithResponses
	logs  *syncBuffer
	seen  *recorder
	snap  *fakeSnapshot
	cfg   controlapi.Config
}

type option func(*controlapi.Config)

func setup(t *testing.T, opts ...option) *bundle {
	t.Helper()
	ctx := t.Context()
	st, err := store.Open(ctx, pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	box, err := secret.NewBox(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	snap := &fakeSnapshot{}
	snap.version.Store(1)
	cfg := controlapi.Config{
		Store: st, Box: box, AdminToken: adminToken, PodName: "pod-test", Version: "test",
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Snapshot: snap,
		Explain:  bridge.Explainer(nil, nil),
	}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := controlapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &bundle{t: t, ctx: ctx, st: st, srv: srv, logs: logs, seen: &recorder{}, snap: snap, cfg: cfg}
	b.admin = b.client(bearer(adminToken))
	return b
}

// client returns a generated client whose responses are recorded in b.seen.
func (b *bundle) client(opts ...client.ClientOption) *client.ClientWithResponses {
	b.t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Transport: &recordingTransport{rec: b.seen}}
	c, err := client.NewClientWithResponses(b.srv.URL, append([]client.ClientOption{client.WithHTTPClient(hc)}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

func bearer(token string) client.ClientOption {
	return client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// session is a signed-in user: its client (cookie jar) sends the CSRF token
// on writes when csrf is on.
type session struct {
	*client.ClientWithResponses
	user models.User
	csrf string
}

// login signs in and returns a client that sends the session's CSRF token.
func (b *bundle) login(email, password string) *session {
	b.t.Helper()
	s := &session{}
	s.ClientWithResponses = b.client(client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if s.csrf != "" && r.Method != http.MethodGet {
			r.Header.Set("X-CSRF-Token", s.csrf)
		}
		return nil
	}))
	resp := call(s.LoginWithResponse(b.ctx, models.LoginRequest{Email: models.Email(email), Password: &password})).want(b.t, http.StatusOK)
	s.user, s.csrf = resp.JSON200.User, resp.JSON200.CsrfToken
	return s
}

// newUser creates a user with a password and signs it in.
func (b *bundle) newUser(name string) *session {
	b.t.Helper()
	email, pw := name+"@example.com", "pw-"+name+"-long-enough"
	call(b.admin.CreateUserWithResponse(b.ctx, models.UserCreate{Email: models.Email(email), Password: &pw})).want(b.t, http.StatusCreated)
	return b.login(email, pw)
}

// grant binds role to user u at the scope (system when both are nil).
func (b *bundle) grant(u uuid.UUID, role models.Role, team, project *uuid.UUID) models.RoleBinding {
	b.t.Helper()
	return *call(b.admin.CreateRoleBindingWithResponse(b.ctx, models.RoleBindingCreate{
		Role: role, UserID: &u, TeamID: team, ProjectID: project,
	})).want(b.t, http.StatusCreated).JSON201
}

// statusCoder is every generated response.
type statusCoder interface{ StatusCode() int }

// res is a generated client call's outcome, for the checks below:
// call(c.GetHostWithResponse(ctx, id)).want(t, 200).JSON200.
type res[R statusCoder] struct {
	r   R
	err error
}

func call[R statusCoder](r R, err error) res[R] { return res[R]{r, err} }

// want checks the call answered status and returns the response.
func (x res[R]) want(t *testing.T, status int) R {
	t.Helper()
	if x.err != nil {
		t.Fatalf("request failed: %v", x.err)
	}
	if got := x.r.StatusCode(); got != status {
		t.Fatalf("status = %d, want %d; body: %s", got, status, body(x.r))
	}
	return x.r
}

// wantErr checks status, the Error's code and (when field is not empty) that
// its details name field.
func (x res[R]) wantErr(t *testing.T, status int, code, field string) models.ErrorInfo {
	t.Helper()
	x.want(t, status)
	e := apiErr(t, x.r)
	if e.Code != code {
		t.Errorf("code = %q, want %q (%s)", e.Code, code, e.Message)
	}
	if field != "" && !slices.Contains(fields(e), field) {
		t.Errorf("details name %v, want %q (%s)", fields(e), field, e.Message)
	}
	return e
}

// body is the raw body of a generated response.
func body(r any) []byte {
	v := reflect.ValueOf(r)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if f := v.FieldByName("Body"); f.IsValid() && f.Kind() == reflect.Slice {
		return f.Bytes()
	}
	return nil
}

// apiErr decodes the shared Error body of a response.
func apiErr(t *testing.T, r any) models.ErrorInfo {
	t.Helper()
	var e models.Error
	if err := json.Unmarshal(body(r), &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not an Error body: %s", body(r))
	}
	return e.Error
}

// fields lists the fields an Error names.
func fields(e models.ErrorInfo) []string {
	var out []string
	if e.Details != nil {
		for _, d := range *e.Details {
			out = append(out, d.Field)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// pageThrough lists a kind page by page (limit 2) and returns the ids in
// order and the number of pages; it fails on a repeated id.
func pageThrough(t *testing.T, list func(cursor *string) (ids []uuid.UUID, next *string)) ([]uuid.UUID, int) {
	t.Helper()
	var all []uuid.UUID
	var cursor *string
	for pages := 1; ; pages++ {
		ids, next := list(cursor)
		if len(ids) > 2 {
			t.Fatalf("page %d has %d items, limit 2", pages, len(ids))
		}
		for _, id := range ids {
			if slices.Contains(all, id) {
				t.Fatalf("id %s on two pages", id)
			}
		}
		all = append(all, ids...)
		if next == nil {
			return all, pages
		}
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		cursor = next
	}
}

// wantPages checks that listing with limit 2 yields exactly want (in any
// order) over ceil(len/2) pages.
func wantPages(t *testing.T, what string, want []uuid.UUID, list func(cursor *string) ([]uuid.UUID, *string)) {
	t.Helper()
	got, pages := pageThrough(t, list)
	if len(got) != len(want) || !sameSet(got, want) {
		t.Errorf("%s: listed %v, want %v", what, got, want)
	}
	if w := (len(want) + 1) / 2; pages != w && !(len(want) == 0 && pages == 1) {
		t.Errorf("%s: %d pages, want %d", what, pages, w)
	}
}

func sameSet(a, b []uuid.UUID) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	cmp := func(p, q uuid.UUID) int { return strings.Compare(p.String(), q.String()) }
	slices.SortFunc(x, cmp)
	slices.SortFunc(y, cmp)
	return slices.Equal(x, y)
}

func ids[T any](items []T, id func(T) uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

// limit2 is the page size the pagination tests use.
var limit2 = ptr[int32](2)

// syncBuffer is a bytes.Buffer safe for the log handler's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recorder keeps every response body a test's clients received.
type recorder struct {
	mu     sync.Mutex
	bodies []string
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

type recordingTransport struct{ rec *recorder }

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	t.rec.mu.Lock()
	t.rec.bodies = append(t.rec.bodies, fmt.Sprintf("%s %s -> %d %s %s", req.Method, req.URL.Path, resp.StatusCode, resp.Header, b))
	t.rec.mu.Unlock()
	return resp, nil
}

// fakeSnapshot stands in for the loader.
type fakeSnapshot struct {
	version  atomic.Uint64
	reloads  atomic.Int32
	listenOK atomic.Bool
}

func (f *fakeSnapshot) Version() uint64    { return f.version.Load() }
func (f *fakeSnapshot) Age() time.Duration { return 3 * time.Second }
func (f *fakeSnapshot) Listening() bool    { return f.listenOK.Load() }
func (f *fakeSnapshot) RequestReload()     { f.reloads.Add(1); f.version.Add(1) }

func storeAuditPage(kind, objectID string) store.AuditLogPage {
	return store.AuditLogPage{Kind: &kind, ObjectID: &objectID, Limit: 100}
}

func nullableInt32(v int32) nullable.Int32 { return nullable.Value(v) }
