package controlapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/relay-llm/relay/openapi/controlgen"
)

// loadSpec reads the embedded JSON without kin-openapi's YAML path; the
// document it gives must be the one controlgen.GetSpec gives, references
// resolved alike.
func TestLoadSpec_MatchesGetSpec(t *testing.T) {
	got, err := loadSpec()
	if err != nil {
		t.Fatalf("loadSpec: %v", err)
	}
	want, err := controlgen.GetSpec()
	if err != nil {
		t.Fatalf("GetSpec: %v", err)
	}
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("loadSpec's document differs from GetSpec's (%d bytes against %d as JSON)", len(g), len(w))
	}
	if len(got.Paths.Map()) == 0 || len(got.Components.Schemas) == 0 {
		t.Fatalf("loadSpec's document has %d paths and %d schemas", len(got.Paths.Map()), len(got.Components.Schemas))
	}
	// References are resolved (JSON shows only the $ref): every schema and
	// every operation's body and parameters carry their values.
	for name, ref := range got.Components.Schemas {
		if ref.Value == nil {
			t.Errorf("schema %s: unresolved", name)
		}
	}
	bodies := 0
	for path, item := range got.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value == nil || p.Value.Schema == nil || p.Value.Schema.Value == nil {
					t.Errorf("%s %s: parameter %s unresolved", method, path, p.Ref)
				}
			}
			if op.RequestBody == nil {
				continue
			}
			if op.RequestBody.Value == nil {
				t.Errorf("%s %s: request body %s unresolved", method, path, op.RequestBody.Ref)
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				if mt.Schema == nil || mt.Schema.Value == nil {
					t.Errorf("%s %s: %s body schema unresolved", method, path, ct)
				}
				bodies++
			}
		}
	}
	if bodies == 0 {
		t.Error("no operation has a request body")
	}
}
