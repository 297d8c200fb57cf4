package openapi_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/relay-llm/relay/migrations"
	"github.com/relay-llm/relay/openapi/controlgen"
)

// setup loads and validates control.yaml once per test.
func setup(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("control.yaml")
	if err != nil {
		t.Fatalf("load control.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate control.yaml: %v", err)
	}
	return doc
}

// operation is one method on one path.
type operation struct {
	method, path string
	op           *openapi3.Operation
}

func operations(doc *openapi3.T) []operation {
	var ops []operation
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		item := doc.Paths.Value(path)
		for _, method := range slices.Sorted(maps.Keys(item.Operations())) {
			ops = append(ops, operation{method, path, item.GetOperation(method)})
		}
	}
	return ops
}

func TestSpec_Valid(t *testing.T) {
	t.Parallel()
	doc := setup(t)
	if got := doc.OpenAPI; !strings.HasPrefix(got, "3.0.") {
		t.Errorf("openapi = %q, want 3.0.x (what oapi-codegen handles fully)", got)
	}
	for _, o := range operations(doc) {
		if !strings.HasPrefix(o.path, "/api/") {
			t.Errorf("%s %s: not under /api/", o.method, o.path)
		}
	}
}

func TestSpec_OperationsHaveIDsSummariesAndErrors(t *testing.T) {
	t.Parallel()
	doc := setup(t)
	errorSchema := doc.Components.Schemas["Error"].Value
	camel := regexp.MustCompile(`^[a-z][A-Za-z]+$`)
	seen := map[string]string{}
	for _, o := range operations(doc) {
		name := o.method + " " + o.path
		id := o.op.OperationID
		switch {
		case id == "":
			t.Errorf("%s: no operationId", name)
		case !camel.MatchString(id):
			t.Errorf("%s: operationId %q is not camelCase", name, id)
		case seen[id] != "":
			t.Errorf("%s: operationId %q also used by %s", name, id, seen[id])
		}
		seen[id] = name
		if o.op.Summary == "" {
			t.Errorf("%s: no summary", name)
		}
		if len(o.op.Tags) == 0 {
			t.Errorf("%s: no tags", name)
		}
		var has4xx, has500 bool
		for code, ref := range o.op.Responses.Map() {
			if code[0] != '4' && code[0] != '5' {
				continue
			}
			has4xx = has4xx || code[0] == '4'
			has500 = has500 || code == "500"
			if !strings.HasPrefix(ref.Ref, "#/components/responses/") {
				t.Errorf("%s: %s is not a shared components/responses entry", name, code)
			}
			mt := ref.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value != errorSchema {
				t.Errorf("%s: %s does not return the Error schema", name, code)
			}
		}
		if !has4xx || !has500 {
			t.Errorf("%s: needs a 4xx and a 500 error response (4xx %v, 500 %v)", name, has4xx, has500)
		}
	}
}

// TestSpec_CRUDConventions checks the verbs and status codes of the design:
// POST collection 201, GET/PATCH item 200, DELETE item 204 (a collection:
// 200 with what was deleted), lists paged.
func TestSpec_CRUDConventions(t *testing.T) {
	t.Parallel()
	doc := setup(t)
	for _, o := range operations(doc) {
		name := o.method + " " + o.path
		if o.method == http.MethodPut {
			t.Errorf("%s: updates are PATCH everywhere", name)
		}
		if o.method == http.MethodDelete && strings.HasSuffix(o.path, "}") && o.op.Responses.Value("204") == nil {
			t.Errorf("%s: DELETE of an item must answer 204", name)
		}
		if o.method == http.MethodDelete && !strings.HasSuffix(o.path, "}") && o.op.Responses.Value("200") == nil {
			t.Errorf("%s: DELETE of a collection must answer 200 with what it deleted", name)
		}
		if strings.HasPrefix(o.op.OperationID, "create") && o.op.Responses.Value("201") == nil {
			t.Errorf("%s: create must answer 201", name)
		}
		if body := o.op.RequestBody; body != nil {
			s := body.Value.Content.Get("application/json").Schema.Value
			if ap := s.AdditionalProperties.Has; ap == nil || *ap {
				t.Errorf("%s: request body must set additionalProperties: false so typos are 400, not ignored", name)
			}
			if o.method == http.MethodPatch {
				if len(s.Required) > 0 {
					t.Errorf("%s: PATCH bodies are partial, yet %v are required", name, s.Required)
				}
				// The request validator fills in defaults: one here would
				// overwrite a stored value the client left out.
				for field, p := range s.Properties {
					if p.Value.Default != nil {
						t.Errorf("%s: PATCH field %s has a default", name, field)
					}
				}
			}
		}
		ok := o.op.Responses.Value("200")
		if o.method != http.MethodGet || ok == nil || ok.Value.Content.Get("application/json") == nil {
			continue
		}
		props := ok.Value.Content.Get("application/json").Schema.Value.Properties
		if props["next_cursor"] == nil {
			continue
		}
		var limit, cursor bool
		for _, p := range o.op.Parameters {
			limit = limit || p.Value.Name == "limit"
			cursor = cursor || p.Value.Name == "cursor"
		}
		if !limit || !cursor || props["items"] == nil {
			t.Errorf("%s: a paged list takes limit and cursor and returns items", name)
		}
	}
}

// TestSpec_NoSecretsInResponses walks every response schema: hashes,
// ciphertexts and passwords never appear, and a secret only in the three
// once-only responses that mint one.
func TestSpec_NoSecretsInResponses(t *testing.T) {
	t.Parallel()
	doc := setup(t)
	forbidden := []string{"password", "password_hash", "key_hash", "token_hash", "secret_ciphertext", "csrf_token_hash"}
	mayHoldSecret := map[*openapi3.Schema]bool{
		doc.Components.Schemas["RelayKeyCreated"].Value:       true,
		doc.Components.Schemas["RelayKeyRotated"].Value:       true,
		doc.Components.Schemas["InferenceTokenCreated"].Value: true,
	}
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, s *openapi3.Schema)
	walk = func(where string, s *openapi3.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		for name, p := range s.Properties {
			if slices.Contains(forbidden, name) || (name == "secret" && !mayHoldSecret[s]) {
				t.Errorf("%s: response property %q", where, name)
			}
			if p.Value.WriteOnly {
				t.Errorf("%s: write-only property %q in a response", where, name)
			}
			walk(where+"."+name, p.Value)
		}
		if s.Items != nil {
			walk(where+"[]", s.Items.Value)
		}
		for _, group := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
			for _, r := range group {
				walk(where, r.Value)
			}
		}
	}
	for _, o := range operations(doc) {
		for code, r := range o.op.Responses.Map() {
			for _, mt := range r.Value.Content {
				if mt.Schema != nil {
					walk(o.op.OperationID+" "+code, mt.Schema.Value)
				}
			}
		}
	}
}

// TestSpec_MatchesSchemaChecks holds the spec's enums and patterns to the
// CHECK constraints of the migrations, so the two cannot drift apart.
func TestSpec_MatchesSchemaChecks(t *testing.T) {
	t.Parallel()
	doc := setup(t)
	sql := readMigrations(t)

	enums := map[string]string{ // table.column → schema
		"hosts.provider":                "Provider",
		"models.kind":                   "ModelKind",
		"bindings.shape":                "Shape",
		"rate_limit_rules.meter":        "Meter",
		"policies.key_strategy":         "KeyStrategy",
		"policies.limiter_failure_mode": "LimiterFailureMode",
		"role_bindings.role":            "Role",
		"budgets.period":                "Period",
	}
	for col, schema := range enums {
		table, column, _ := strings.Cut(col, ".")
		m := regexp.MustCompile(`CHECK \(` + column + ` IN \(([^)]*)\)\)`).FindStringSubmatch(tableDef(t, sql, table))
		// A later migration may replace the constraint: the last one wins.
		if later := regexp.MustCompile(`ADD CONSTRAINT `+table+`_`+column+`_check\s+CHECK \(`+column+` IN \(([^)]*)\)\)`).FindAllStringSubmatch(sql, -1); len(later) > 0 {
			m = later[len(later)-1]
		}
		if m == nil {
			t.Errorf("%s: no CHECK (… IN …) in the migrations", col)
			continue
		}
		var want []string
		for _, v := range strings.Split(m[1], ",") {
			want = append(want, strings.Trim(strings.TrimSpace(v), "'"))
		}
		var got []string
		for _, v := range doc.Components.Schemas[schema].Value.Enum {
			got = append(got, v.(string))
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("schema %s = %v, want %v as in the CHECK on %s", schema, got, want, col)
		}
	}

	patterns := map[string]string{ // table.column → schema
		"teams.slug":            "Slug",
		"projects.slug":         "Slug",
		"groups.slug":           "Slug",
		"rate_limits.slug":      "Slug",
		"policies.slug":         "Slug",
		"service_accounts.slug": "Slug",
		"hosts.slug":            "HostSlug",
		"host_keys.slug":        "HostSlug",
		"models.name":           "ModelName",
		"host_keys.secret_ref":  "SecretRef",
		"hosts.base_url":        "", // inline in HostCreate
	}
	for col, schema := range patterns {
		table, column, _ := strings.Cut(col, ".")
		m := regexp.MustCompile(`CHECK \(` + column + ` ~ '([^']*)'\)`).FindStringSubmatch(tableDef(t, sql, table))
		if m == nil {
			t.Errorf("%s: no CHECK (… ~ …) in the migrations", col)
			continue
		}
		var got string
		if schema == "" {
			got = doc.Components.Schemas["HostCreate"].Value.Properties[column].Value.Pattern
		} else {
			got = doc.Components.Schemas[schema].Value.Pattern
		}
		if got != m[1] {
			t.Errorf("%s pattern = %q, want %q as in the CHECK on %s", col, got, m[1], col)
		}
	}
}

func readMigrations(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(migrations.FS, path)
		// Only what a migration does on the way up: its Down section
		// restores older constraints.
		up, _, _ := strings.Cut(string(data), "-- +goose Down")
		b.WriteString(up)
		return err
	})
	if err != nil {
		t.Fatalf("read migrations: %v", err)
	}
	return b.String()
}

// tableDef returns the CREATE TABLE statement of table.
func tableDef(t *testing.T, sql, table string) string {
	t.Helper()
	_, rest, ok := strings.Cut(sql, "CREATE TABLE "+table+" (")
	if !ok {
		t.Fatalf("no CREATE TABLE %s in the migrations", table)
	}
	def, _, _ := strings.Cut(rest, "\n);")
	return def
}

// TestSpec_EmbeddedIsCurrent fails when controlgen's embedded spec (what
// requests are validated against) differs from control.yaml: run go generate.
func TestSpec_EmbeddedIsCurrent(t *testing.T) {
	t.Parallel()
	doc := setup(t)
	embedded, err := controlgen.GetSpec()
	if err != nil {
		t.Fatalf("GetSpec: %v", err)
	}
	want, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("the spec embedded in controlgen differs from control.yaml; run `go generate ./openapi/...`")
	}
}
