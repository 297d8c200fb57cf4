package controlapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/openapi/models"
)

// TestService_NobodyGetsNothing: every exported Service method, found by
// reflection, called as a signed-in user without a single role binding, with
// zero arguments, is refused (403, 404, or a 400/422 for the row the zero
// arguments name) or answers without a trace of the rows that exist — so a
// method added without its authorization check fails here as well as in
// TestService_EveryMethodAuthorizes.
func TestService_NobodyGetsNothing(t *testing.T) {
	b := setup(t)
	team := b.team("svc-nobody")
	proj := b.project(team.ID, "p")
	host := b.host("svc-host")
	secret := []string{team.ID.String(), proj.ID.String(), host.ID.String()}

	srv := b.srv.Config.Handler.(*controlapi.Server)
	email, pw := "svc-nobody@example.com", "pw-svc-nobody-long-enough"
	call(b.admin.CreateUserWithResponse(b.ctx, models.UserCreate{Email: models.Email(email), Password: &pw})).want(t, http.StatusCreated)
	hc, _ := rawLogin(t, b, email, pw)
	base, _ := url.Parse(b.srv.URL)
	r := httptest.NewRequestWithContext(b.ctx, http.MethodGet, b.srv.URL+"/", nil)
	for _, ck := range hc.Jar.Cookies(base) {
		r.AddCookie(ck)
	}
	ctx, _, err := srv.SignedIn(r)
	if err != nil {
		t.Fatal(err)
	}

	svc := reflect.ValueOf(srv.Service())
	for i := range svc.NumMethod() {
		name := svc.Type().Method(i).Name
		if name == "Logout" { // it would end the session the rest runs in
			continue
		}
		t.Run(name, func(t *testing.T) {
			out, err := callZero(svc.Method(i), ctx)
			if err != nil {
				for _, ok := range []error{controlapi.ErrForbidden, controlapi.ErrNotFound, controlapi.ErrValidation, controlapi.ErrBadRequest, controlapi.ErrUnauthed} {
					if errors.Is(err, ok) {
						return
					}
				}
				t.Fatalf("%s as nobody: %v, want forbidden, not found or invalid", name, err)
			}
			body, _ := json.Marshal(out)
			for _, id := range secret {
				if strings.Contains(string(body), id) {
					t.Errorf("%s as nobody answered a row it may not see: %s", name, body)
				}
			}
		})
	}
}

// callZero calls m with ctx and the zero value of every other argument (a
// pointer to one for a pointer); it returns the first result and the error.
func callZero(m reflect.Value, ctx context.Context) (any, error) {
	mt := m.Type()
	args := make([]reflect.Value, mt.NumIn())
	for j := range args {
		switch in := mt.In(j); {
		case j == 0:
			args[j] = reflect.ValueOf(ctx)
		case in.Kind() == reflect.Pointer:
			args[j] = reflect.New(in.Elem())
		default:
			args[j] = reflect.Zero(in)
		}
	}
	res := m.Call(args)
	var err error
	if e := res[len(res)-1]; !e.IsNil() {
		err = e.Interface().(error)
	}
	if len(res) == 1 {
		return nil, err
	}
	return res[0].Interface(), err
}
