package controlapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"testing"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/openapi/controlgen"
)

// TestService_EveryMethodAuthorizes is the accounting of the service layer:
// every exported method of Service, found by reflection, is called with a
// rule table that names no operation, as a system admin, on a server with no
// store. A method that enters the authorization layer first is refused there
// (500, nothing run); one that does not runs its body, which panics on the
// missing store or answers something else — so a new method without the
// check fails here by name.
func TestService_EveryMethodAuthorizes(t *testing.T) {
	svc := &Service{s: &Server{log: slog.New(slog.DiscardHandler)}, rules: map[string]rule{}}
	admin := &caller{Subject: rbac.ForUser([16]byte{1}, []rbac.Grant{{Role: rbac.Admin, Scope: rbac.System()}}), actor: "user:test"}
	ctx := withCaller(context.Background(), admin)
	v := reflect.ValueOf(svc)
	typ := v.Type()
	if typ.NumMethod() == 0 {
		t.Fatal("Service has no methods")
	}
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		t.Run(m.Name, func(t *testing.T) {
			err := callService(v.Method(i), ctx)
			var e *apiError
			if !errors.As(err, &e) || e.status != http.StatusInternalServerError || e.code != codeInternal {
				t.Errorf("%s does not enter the authorization layer first: with no rules it answered %v", m.Name, err)
			}
		})
	}
}

// callService calls a Service method with ctx and the zero value of every
// other argument (a pointer to a zero value for a pointer), and returns its
// error; a panic is returned as an error too.
func callService(m reflect.Value, ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	mt := m.Type()
	args := make([]reflect.Value, mt.NumIn())
	for j := range args {
		in := mt.In(j)
		switch {
		case j == 0:
			args[j] = reflect.ValueOf(ctx)
		case in.Kind() == reflect.Pointer:
			args[j] = reflect.New(in.Elem())
		default:
			args[j] = reflect.Zero(in)
		}
	}
	out := m.Call(args)
	last := out[len(out)-1]
	if last.IsNil() {
		return nil
	}
	return last.Interface().(error)
}

// TestService_ServesEveryOperation: every operation of the strict server is a
// Service method of the same name. The strict handlers run no authorization
// of their own, so an operation written on Server alone would skip enter;
// it fails here by name instead.
func TestService_ServesEveryOperation(t *testing.T) {
	ops := reflect.TypeFor[controlgen.StrictServerInterface]()
	svc := reflect.TypeFor[*Service]()
	for i := range ops.NumMethod() {
		name := ops.Method(i).Name
		if _, ok := svc.MethodByName(name); !ok {
			t.Errorf("operation %s is not a Service method: it would run without the authorization layer", name)
		}
	}
}
