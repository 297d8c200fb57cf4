package controlapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/openapi/controlgen"
)

// TestAuthz_EveryOperationHasARule: the layer has a rule for every operation
// of the spec and none for an operation the spec lacks.
func TestAuthz_EveryOperationHasARule(t *testing.T) {
	doc, err := controlgen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	spec := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			name := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:]
			spec[name] = true
			if _, ok := operationRules[name]; !ok {
				t.Errorf("operation %s has no rule in operationRules", op.OperationID)
			}
		}
	}
	for name := range operationRules {
		if !spec[name] {
			t.Errorf("operationRules names %s, which control.yaml does not have", name)
		}
	}
}

// TestAuthz_FailsClosed: an operation without a rule never reaches its
// handler; a system rule is checked before the handler; a handler that
// answers without asking its rule's verb (it forgot to authorize, or asked
// another) answers 500, not its success — as does one asking a verb that is
// not its rule's.
func TestAuthz_FailsClosed(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	viewer := &caller{Subject: rbac.ForUser([16]byte{1}, []rbac.Grant{{Role: rbac.Viewer, Scope: rbac.System()}}), actor: "user:test"}
	ctx := withCaller(context.Background(), viewer)
	run := func(op string, handler func(ctx context.Context) error) (ran bool, err error) {
		ctx, done, err := s.guard(ctx, operationRules, op)
		if err != nil {
			return false, err
		}
		defer done(&err)
		return true, handler(ctx)
	}
	status := func(err error) int {
		if e, ok := err.(*apiError); ok {
			return e.status
		}
		return 0
	}
	asks := func(v rbac.Verb) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			c, _ := callerFrom(ctx)
			c.Can(v, rbac.System())
			return nil
		}
	}
	nothing := func(context.Context) error { return nil }

	if ran, err := run("NoSuchOperation", nothing); ran || status(err) != http.StatusInternalServerError {
		t.Errorf("an operation without a rule: ran %v, err %v", ran, err)
	}
	if ran, err := run("CreateHost", nothing); ran || status(err) != http.StatusForbidden {
		t.Errorf("a system rule as a viewer: ran %v, err %v", ran, err)
	}
	if _, err := run("GetProject", nothing); status(err) != http.StatusInternalServerError {
		t.Errorf("a handler that asks nothing: err %v, want 500", err)
	}
	if _, err := run("GetProject", asks(rbac.ManageSystem)); status(err) != http.StatusInternalServerError {
		t.Errorf("a handler that asks another verb than its rule's: err %v, want 500", err)
	}
	if _, err := run("GetProject", asks(rbac.Read)); err != nil {
		t.Errorf("a handler that asks its rule's verb: err %v", err)
	}
	if _, err := run("Whoami", nothing); err != nil {
		t.Errorf("an operation any caller may call: err %v", err)
	}
	// Each operation gets its own record: what one asked does not count for the next.
	if _, err := run("GetProject", nothing); status(err) != http.StatusInternalServerError {
		t.Errorf("a second operation inherited the first's questions: err %v", err)
	}
}
