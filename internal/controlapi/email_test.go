package controlapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
)

// TestUsers_EmailRoundTrip: an address is checked once, on write, and
// stored in the form every read parses back — one that cannot read back
// (a quoted local part) is a 422 naming email, not a 500 on create and a
// user list, GET and export broken afterwards.
func TestUsers_EmailRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	for i, tc := range []struct {
		in, stored string
	}{
		{`"<img src=x onerror=alert(1)>"@example.com`, ""},
		{`"a b"@example.com`, ""},
		{`"ada"@example.com`, "ada@example.com"},
		{`Ada <ada2@example.com>`, "ada2@example.com"},
		{`o'brien+tag@example.com`, "o'brien+tag@example.com"},
		{`x@[127.0.0.1]`, "x@[127.0.0.1]"},
	} {
		// Raw JSON: the generated client's Email type would rewrite it.
		body, _ := json.Marshal(map[string]string{"email": tc.in})
		r := call(c.CreateUserWithBodyWithResponse(ctx, "application/json", bytes.NewReader(body)))
		if tc.stored == "" {
			r.wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "email")
			continue
		}
		u := r.want(t, http.StatusCreated).JSON201
		if string(u.Email) != tc.stored {
			t.Errorf("%d: stored %q, want %q", i, u.Email, tc.stored)
		}
		if got := call(c.GetUserWithResponse(ctx, u.ID)).want(t, http.StatusOK).JSON200; string(got.Email) != tc.stored {
			t.Errorf("%d: read back %q", i, got.Email)
		}
	}
	other := call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: "plain@example.com"})).want(t, http.StatusCreated).JSON201
	call(c.UpdateUserWithBodyWithResponse(ctx, other.ID, "application/json", strings.NewReader(`{"email":"\"<b>x</b>\"@example.com"}`))).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "email")
	call(c.ListUsersWithResponse(ctx, nil)).want(t, http.StatusOK)
}
