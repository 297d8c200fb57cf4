package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

const actor = "admin-token"

// TestMain fails a full run of the package when a generated query was never
// executed by any test: every query in queries/ must have a test.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		if missing := unexecutedQueries(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test executes these generated queries: %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}

// executed holds the name of every generated query a test ran, seen by
// queryTracer on the pools the tests use.
var executed sync.Map

// queryName picks the query name out of the comment sqlc puts first in its SQL.
var queryName = regexp.MustCompile(`^-- name: (\w+) :`)

// copyQueries names the generated :copyfrom query of each table.
var copyQueries = map[string]string{"usage_events": "InsertUsageEvents", "payload_captures": "InsertPayloadCaptures"}

type queryTracer struct{}

func (queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if m := queryName.FindStringSubmatch(d.SQL); m != nil {
		executed.Store(m[1], true)
	}
	return ctx
}

func (queryTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (queryTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	if name, ok := copyQueries[d.TableName[len(d.TableName)-1]]; ok {
		executed.Store(name, true)
	}
	return ctx
}

func (queryTracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func unexecutedQueries() []string {
	var missing []string
	typ := reflect.TypeFor[*dbsqlc.Queries]()
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if _, ok := executed.Load(name); !ok && name != "WithTx" {
			missing = append(missing, name)
		}
	}
	return missing
}

// bundle is what a test needs: a store on its own database.
type bundle struct {
	ctx context.Context
	s   *Store
	url string
}

// setup gives the test its own database and a store over a pool that records
// the queries it runs (store.Open offers no tracer; TestOpen covers Open).
func setup(t *testing.T) *bundle {
	t.Helper()
	url := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = queryTracer{}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := New(pool)
	t.Cleanup(s.Close)
	return &bundle{ctx: t.Context(), s: s, url: url}
}

// mk returns the row of a call that must succeed.
func mk[R any](t testing.TB) func(R, error) R {
	t.Helper()
	return func(r R, err error) R {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// wantErr fails unless err is (or wraps) want.
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func ptrTo[T any](v T) *T { return &v }

// Valid rows, unique by name.

func hostRow(slug string) Host {
	return Host{
		Slug: slug, Name: "Host " + slug, Provider: "openai", BaseURL: "https://api.example.com/v1",
		Enabled: true, ConnectTimeoutMs: 5000, FirstByteTimeoutMs: 60000, IdleTimeoutMs: 60000, TotalTimeoutMs: 600000,
	}
}

func modelRow(name string) Model {
	return Model{
		Name: name, Provider: "openai", Kind: "chat", ContextWindow: 128000, MaxOutputTokens: 4096,
		SupportsTools: true, SupportsJSON: true,
	}
}

func policyRow(slug string) Policy {
	return Policy{Slug: slug, KeyStrategy: "prioritized", MaxAttempts: 3, LimiterFailureMode: "open"}
}

// fixture is one row of each kind the others reference, made through the store.
type fixture struct {
	team      Team
	project   Project
	user      User
	group     Group
	sa        ServiceAccount
	rateLimit RateLimit
	host      Host
	model     Model
	hostKey   HostKey
	policy    Policy
	relayKey  RelayKey
}

func newFixture(t *testing.T, b *bundle, tag string) fixture {
	t.Helper()
	ctx, s := b.ctx, b.s
	var f fixture
	f.team = mk[Team](t)(s.Teams().Create(ctx, actor, Team{Slug: "team-" + tag}))
	f.project = mk[Project](t)(s.Projects().Create(ctx, actor, Project{TeamID: f.team.ID, Slug: "proj-" + tag}))
	f.user = mk[User](t)(s.Users().Create(ctx, actor, User{Email: tag + "@example.com", PasswordHash: ptrTo("$argon2id$secret-" + tag)}))
	f.group = mk[Group](t)(s.Groups().Create(ctx, actor, Group{Slug: "group-" + tag}))
	f.policy = mk[Policy](t)(s.Policies().Create(ctx, actor, policyRow("policy-"+tag)))
	f.sa = mk[ServiceAccount](t)(s.ServiceAccounts().Create(ctx, actor, ServiceAccount{ProjectID: f.project.ID, Slug: "sa-" + tag, PolicyID: &f.policy.ID}))
	f.rateLimit = mk[RateLimit](t)(s.RateLimits().Create(ctx, actor, RateLimit{Slug: "rl-" + tag}))
	f.host = mk[Host](t)(s.Hosts().Create(ctx, actor, hostRow("host-"+tag)))
	f.model = mk[Model](t)(s.Models().Create(ctx, actor, modelRow("model-"+tag)))
	f.hostKey = mk[HostKey](t)(s.HostKeys().Create(ctx, actor, HostKey{HostID: f.host.ID, Slug: "key-" + tag, SecretRef: ptrTo("env:KEY_" + tag), Enabled: true}))
	f.relayKey = mk[RelayKey](t)(s.RelayKeys().Create(ctx, actor, RelayKey{
		KeyHash: hash("sk-wr-" + tag), DisplayPrefix: "sk-wr-" + tag[:1], ProjectID: f.project.ID, ServiceAccountID: &f.sa.ID,
	}))
	return f
}

// auditRows returns the audit rows of one object, oldest first.
func auditRows(t *testing.T, b *bundle, kind, objectID string) []AuditLog {
	t.Helper()
	return mk[[]AuditLog](t)(b.s.ListAuditLog(b.ctx, AuditLogPage{Kind: &kind, ObjectID: &objectID, Limit: 100}))
}

func actions(rows []AuditLog) []string {
	var as []string
	for _, r := range rows {
		as = append(as, r.Action)
	}
	return as
}

// checkNoSecrets fails when an audit row names a secret column or holds the
// value of one of row's secret fields.
func checkNoSecrets(t *testing.T, a AuditLog, row any) {
	t.Helper()
	for _, doc := range []json.RawMessage{a.Before, a.After} {
		if doc == nil {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatalf("audit %d: %v", a.ID, err)
		}
		for f := range secretFields {
			if _, ok := m[columnName(f)]; ok {
				t.Errorf("audit %d %s holds %s: %s", a.ID, a.Action, columnName(f), doc)
			}
		}
		rv := reflect.ValueOf(row)
		for f := range secretFields {
			v := rv.FieldByName(f)
			if !v.IsValid() || v.IsZero() {
				continue
			}
			secret, _ := json.Marshal(v.Interface()) // a quoted string: base64 for bytes
			if bytes.Contains(doc, bytes.Trim(secret, `"`)) {
				t.Errorf("audit %d %s holds the value of %s", a.ID, a.Action, f)
			}
		}
	}
}

// sameRow compares two rows field by field, times by instant, ignoring updated_at.
func sameRow(a, b any) bool {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range av.NumField() {
		if av.Type().Field(i).Name == "UpdatedAt" {
			continue
		}
		x, y := av.Field(i).Interface(), bv.Field(i).Interface()
		switch x := x.(type) {
		case time.Time:
			if !x.Equal(y.(time.Time)) {
				return false
			}
		case *time.Time:
			y := y.(*time.Time)
			if (x == nil) != (y == nil) || x != nil && !x.Equal(*y) {
				return false
			}
		default:
			if !reflect.DeepEqual(x, y) {
				return false
			}
		}
	}
	return true
}

func TestOpen(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Teams().List(t.Context(), Page{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), "postgres://%zz"); err == nil {
		t.Fatal("Open of a malformed URL succeeded")
	}
}
