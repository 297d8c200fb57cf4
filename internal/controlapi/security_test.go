package controlapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/client"
	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/server"
)

// The session cookie is Secure whenever the browser reached the control
// plane over TLS: on a TLS listener, or through a trusted proxy that says so.
func TestSession_CookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	call(b.admin.CreateUserWithResponse(b.ctx, models.UserCreate{Email: "ada@example.com", Password: ptr("correct horse battery")})).want(t, http.StatusCreated)
	api, err := controlapi.New(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := server.Forwarded([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, api)
	for _, tc := range []struct {
		name   string
		remote string
		tls    bool
		proto  string
		secure bool
	}{
		{"plain HTTP", "192.0.2.1:1000", false, "", false},
		{"TLS listener", "192.0.2.1:1000", true, "", true},
		{"trusted proxy, https", "10.0.0.9:1000", false, "https", true},
		{"trusted proxy, http", "10.0.0.9:1000", false, "http", false},
		{"untrusted peer claims https", "192.0.2.1:1000", false, "https", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do := func(path, body string, edit func(*http.Request)) *http.Response {
				r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.RemoteAddr = tc.remote
				if tc.tls {
					r.TLS = &tls.ConnectionState{}
				}
				if tc.proto != "" {
					r.Header.Set("X-Forwarded-Proto", tc.proto)
				}
				edit(r)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Result()
			}
			login := do("/api/auth/login", `{"email":"ada@example.com","password":"correct horse battery"}`, func(*http.Request) {})
			if login.StatusCode != http.StatusOK {
				t.Fatalf("login: %d", login.StatusCode)
			}
			ck := sessionCookie(t, login)
			if ck.Secure != tc.secure {
				t.Errorf("login: Secure = %v, want %v (%q)", ck.Secure, tc.secure, login.Header["Set-Cookie"])
			}
			var sess models.Session
			if err := json.NewDecoder(login.Body).Decode(&sess); err != nil {
				t.Fatal(err)
			}
			out := do("/api/auth/logout", "", func(r *http.Request) {
				r.AddCookie(&http.Cookie{Name: controlapi.CookieName, Value: ck.Value})
				r.Header.Set(controlapi.CSRFHeader, sess.CsrfToken)
			})
			if out.StatusCode != http.StatusNoContent {
				t.Fatalf("logout: %d", out.StatusCode)
			}
			if c := sessionCookie(t, out); c.Secure != tc.secure {
				t.Errorf("logout: Secure = %v, want %v", c.Secure, tc.secure)
			}
		})
	}
}

// Behind the CSRF token, a cookie-signed write must come from this origin as
// the browser tells it (Sec-Fetch-Site, else Origin); clients that are not
// browsers send neither and pass.
func TestSession_CrossOriginWritesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ada := b.newUser("ada")
	b.grant(ada.user.ID, models.RoleAdmin, nil, nil)
	login := call(b.client().LoginWithResponse(b.ctx, models.LoginRequest{Email: "ada@example.com", Password: ptr("pw-ada-long-enough")})).want(t, http.StatusOK)
	token, csrf := sessionCookie(t, login.HTTPResponse).Value, login.JSON200.CsrfToken
	self := strings.TrimPrefix(b.srv.URL, "http://")
	for i, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no browser headers", nil, http.StatusCreated},
		{"same origin", map[string]string{"Origin": b.srv.URL}, http.StatusCreated},
		{"Sec-Fetch-Site same-origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": b.srv.URL}, http.StatusCreated},
		{"another origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"another port", map[string]string{"Origin": "http://" + strings.Split(self, ":")[0] + ":1"}, http.StatusForbidden},
		{"opaque origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"Sec-Fetch-Site cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"Sec-Fetch-Site same-site", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": b.srv.URL}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := b.client(client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
				r.AddCookie(&http.Cookie{Name: controlapi.CookieName, Value: token})
				r.Header.Set(controlapi.CSRFHeader, csrf)
				for k, v := range tc.header {
					r.Header.Set(k, v)
				}
				return nil
			}))
			r := call(c.CreateTeamWithResponse(b.ctx, models.TeamCreate{Slug: fmt.Sprint("t", i)}))
			if tc.want == http.StatusForbidden {
				r.wantErr(t, http.StatusForbidden, "csrf_failed", "")
			} else {
				r.want(t, tc.want)
			}
		})
	}
	// The admin bearer is no browser's: its Origin is not judged.
	c := b.client(bearer(adminToken), client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Origin", "https://evil.example")
		return nil
	}))
	call(c.CreateTeamWithResponse(b.ctx, models.TeamCreate{Slug: "bearer"})).want(t, http.StatusCreated)
}

// Every API answer says nosniff and no-store: those that carry a secret (a
// minted or rotated relay key, an inference token) above all, but errors
// and lists too.
func TestAPI_EveryAnswerIsNoStoreAndNosniff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	p := b.project(b.team("t").ID, "p")
	sa := b.serviceAccount(p.ID, "sa")
	dev := b.newUser("dev")
	b.grant(dev.user.ID, models.RoleDeveloper, nil, &p.ID)

	minted := call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID})).want(t, http.StatusCreated)
	rotated := call(c.RotateRelayKeyWithResponse(ctx, minted.JSON201.RelayKey.ID, models.RelayKeyRotate{GraceSeconds: 60})).want(t, http.StatusCreated)
	token := call(dev.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: p.ID})).want(t, http.StatusCreated)
	teams := call(c.ListTeamsWithResponse(ctx, nil)).want(t, http.StatusOK)
	missing := call(c.GetTeamWithResponse(ctx, uuid.New()))
	anonymous := call(b.client().ListTeamsWithResponse(ctx, nil))
	for name, resp := range map[string]*http.Response{
		"mint": minted.HTTPResponse, "rotate": rotated.HTTPResponse, "inference token": token.HTTPResponse,
		"list": teams.HTTPResponse, "404": missing.r.HTTPResponse, "401": anonymous.r.HTTPResponse,
	} {
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", name, got)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", name, got)
		}
	}
	// A path the spec does not have, too.
	resp, err := http.Get(b.srv.URL + "/api/nope")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("unknown path: %v", resp.Header)
	}
}
