package controlapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/openapi/client"
)

// sessionCookie returns the relay_session cookie a response set.
func sessionCookie(t *testing.T, r *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range r.Cookies() {
		if c.Name == controlapi.CookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", controlapi.CookieName, r.Header["Set-Cookie"])
	return nil
}

// withCookie is a client that sends a fixed session cookie and CSRF token.
func (b *bundle) withCookie(token, csrf string) *client.ClientWithResponses {
	return b.client(client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.AddCookie(&http.Cookie{Name: controlapi.CookieName, Value: token})
		if csrf != "" {
			r.Header.Set("X-CSRF-Token", csrf)
		}
		return nil
	}))
}

func TestSession_LoginCSRFLogout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	call(b.admin.CreateUserWithResponse(ctx, models.UserCreate{Email: "ada@example.com", Password: ptr("correct horse battery")})).want(t, http.StatusCreated)
	ada := b.client()
	login := call(ada.LoginWithResponse(ctx, models.LoginRequest{Email: "ADA@example.com", Password: ptr("correct horse battery")})).want(t, http.StatusOK)
	ck := sessionCookie(t, login.HTTPResponse)
	raw := strings.Join(login.HTTPResponse.Header["Set-Cookie"], "; ")
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure || !strings.Contains(raw, "SameSite=Strict") {
		t.Errorf("cookie = %q", raw)
	}
	csrf := login.JSON200.CsrfToken
	if csrf == "" || login.JSON200.User.Email != "ada@example.com" {
		t.Fatalf("login = %+v", login.JSON200)
	}
	// The session row holds the token's SHA-256, not the token.
	if _, err := b.st.Sessions().GetByHash(ctx, []byte(ck.Value)); err == nil {
		t.Error("the session is findable by its plaintext token")
	}

	me := b.withCookie(ck.Value, "")
	w := call(me.WhoamiWithResponse(ctx)).want(t, http.StatusOK).JSON200
	if w.Principal != models.PrincipalUser || w.User == nil || w.User.Email != "ada@example.com" || w.CsrfToken == nil || *w.CsrfToken != csrf {
		t.Errorf("whoami = %+v", w)
	}
	b.grant(w.User.ID, models.RoleAdmin, nil, nil)

	// Writes need the CSRF token; reads do not.
	call(me.ListTeamsWithResponse(ctx, nil)).want(t, http.StatusOK)
	call(me.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "nocsrf"})).wantErr(t, http.StatusForbidden, "csrf_failed", "")
	call(b.withCookie(ck.Value, "wrong").CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "badcsrf"})).wantErr(t, http.StatusForbidden, "csrf_failed", "")
	good := b.withCookie(ck.Value, csrf)
	tm := call(good.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "withcsrf"})).want(t, http.StatusCreated).JSON201
	// The audit row names the user.
	rows, err := b.st.ListAuditLog(ctx, storeAuditPage("teams", tm.ID.String()))
	if err != nil || len(rows) != 1 || rows[0].Actor != "user:"+w.User.ID.String() {
		t.Errorf("audit rows = %+v, %v", rows, err)
	}

	call(me.LogoutWithResponse(ctx)).wantErr(t, http.StatusForbidden, "csrf_failed", "")
	out := call(good.LogoutWithResponse(ctx)).want(t, http.StatusNoContent)
	if c := sessionCookie(t, out.HTTPResponse); c.Value != "" || c.MaxAge >= 0 {
		t.Errorf("logout cookie = %+v", c)
	}
	call(good.WhoamiWithResponse(ctx)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(good.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "after"})).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
}

func TestSession_SecureCookieAndFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *controlapi.Config) { cfg.SecureCookies = true; cfg.LoginAttempts = 3 })
	ctx := b.ctx
	u := call(b.admin.CreateUserWithResponse(ctx, models.UserCreate{Email: "bob@example.com", Password: ptr("bob-password")})).want(t, http.StatusCreated).JSON201
	c := b.client()
	r := call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "bob@example.com", Password: ptr("bob-password")})).want(t, http.StatusOK)
	if ck := sessionCookie(t, r.HTTPResponse); !ck.Secure {
		t.Errorf("cookie without Secure: %v", r.HTTPResponse.Header["Set-Cookie"])
	}
	token := sessionCookie(t, r.HTTPResponse).Value

	call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "nobody@example.com", Password: ptr("x")})).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "bob@example.com", Password: ptr("wrong")})).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "bob@example.com", Password: ptr("wrong")})).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "bob@example.com", Password: ptr("wrong")})).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	// The fourth attempt within the window is refused, even with the right password.
	tooMany := call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "bob@example.com", Password: ptr("bob-password")}))
	tooMany.wantErr(t, http.StatusTooManyRequests, "rate_limited", "")
	if tooMany.r.HTTPResponse.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	call(c.LoginWithResponse(ctx, models.LoginRequest{Email: "bob@example.com"})).wantErr(t, http.StatusBadRequest, "invalid_request", "password")

	// Disabling the user ends its sessions.
	call(b.withCookie(token, "").WhoamiWithResponse(ctx)).want(t, http.StatusOK)
	call(b.admin.UpdateUserWithResponse(ctx, u.ID, models.UserUpdate{Disabled: ptr(true)})).want(t, http.StatusOK)
	call(b.withCookie(token, "").WhoamiWithResponse(ctx)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")

	// No credentials, a wrong bearer, a relay key as bearer: 401.
	call(b.client().ListHostsWithResponse(ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(b.client(bearer("not-the-token")).ListHostsWithResponse(ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	call(b.client(bearer("sk-wr-AAAA")).ListHostsWithResponse(ctx, nil)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	// The admin token has no session to end, and whoami says what it is.
	call(b.admin.LogoutWithResponse(ctx)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	if w := call(b.admin.WhoamiWithResponse(ctx)).want(t, http.StatusOK).JSON200; w.Principal != models.PrincipalAdminToken || w.User != nil {
		t.Errorf("whoami = %+v", w)
	}
}

func TestSession_PasswordChangeEndsSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	s := b.newUser("carol")
	// Users change their own name and password, nothing else.
	call(s.UpdateUserWithResponse(ctx, s.user.ID, models.UserUpdate{Name: ptr("Carol")})).want(t, http.StatusOK)
	call(s.UpdateUserWithResponse(ctx, s.user.ID, models.UserUpdate{Email: ptr[models.Email]("evil@example.com")})).wantErr(t, http.StatusForbidden, "forbidden", "")
	call(s.UpdateUserWithResponse(ctx, s.user.ID, models.UserUpdate{Disabled: ptr(false)})).wantErr(t, http.StatusForbidden, "forbidden", "")
	call(s.UpdateUserWithResponse(ctx, s.user.ID, models.UserUpdate{Password: ptr("a brand new one")})).want(t, http.StatusOK)
	call(s.WhoamiWithResponse(ctx)).wantErr(t, http.StatusUnauthorized, "unauthenticated", "")
	b.login("carol@example.com", "a brand new one")
}
