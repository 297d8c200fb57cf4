package controlapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/store"
)

// TestSecrets_NeverLeave drives every write that takes a secret — host key
// values, passwords, minted relay keys and inference tokens — and then looks
// for them in every response body the clients received, in the log, and in
// the audit log: host key values and passwords must appear nowhere; a minted
// credential only in the one response that minted it.
func TestSecrets_NeverLeave(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	const (
		hostKeyValue  = "upstream-SECRET-value-aaaa-0001"
		hostKeyValue2 = "upstream-SECRET-value-bbbb-0002"
		password      = "PASSWORD-never-logged-0003"
		password2     = "PASSWORD-never-logged-0004"
	)
	h := b.host("h")
	hk := call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "k", Secret: ptr(hostKeyValue)})).want(t, http.StatusCreated).JSON201
	call(c.UpdateHostKeyWithResponse(ctx, hk.ID, models.HostKeyUpdate{Secret: ptr(hostKeyValue2)})).want(t, http.StatusOK)
	call(c.GetHostKeyWithResponse(ctx, hk.ID)).want(t, http.StatusOK)
	call(c.ListHostKeysWithResponse(ctx, nil)).want(t, http.StatusOK)
	// A rejected secret (both fields) must not be echoed either.
	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "k2", Secret: ptr(hostKeyValue), SecretRef: ptr("env:X")})).
		want(t, http.StatusUnprocessableEntity)
	// Nor one that fails validation (too long for the spec).
	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "k3", Secret: ptr(hostKeyValue + strings.Repeat("x", 9000))})).
		want(t, http.StatusBadRequest)

	u := call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: "sec@example.com", Password: ptr(password)})).want(t, http.StatusCreated).JSON201
	b.grant(u.ID, models.RoleAdmin, nil, nil)
	s := b.login("sec@example.com", password)
	call(s.LoginWithResponse(ctx, models.LoginRequest{Email: "sec@example.com", Password: ptr(password + "-wrong")})).want(t, http.StatusUnauthorized)
	call(s.UpdateUserWithResponse(ctx, u.ID, models.UserUpdate{Password: ptr(password2)})).want(t, http.StatusOK)
	s = b.login("sec@example.com", password2)
	// A too-short password is refused without being echoed.
	call(c.UpdateUserWithResponse(ctx, u.ID, models.UserUpdate{Password: ptr("short")})).want(t, http.StatusBadRequest)

	p := b.project(b.team("t").ID, "p")
	sa := b.serviceAccount(p.ID, "sa")
	minted := call(s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID})).want(t, http.StatusCreated).JSON201
	rotated := call(s.RotateRelayKeyWithResponse(ctx, minted.RelayKey.ID, models.RelayKeyRotate{GraceSeconds: 60})).want(t, http.StatusCreated).JSON201
	call(s.GetRelayKeyWithResponse(ctx, minted.RelayKey.ID)).want(t, http.StatusOK)
	call(s.ListRelayKeysWithResponse(ctx, nil)).want(t, http.StatusOK)
	token := call(s.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: p.ID})).want(t, http.StatusCreated).JSON201
	call(s.ListInferenceTokensWithResponse(ctx, nil)).want(t, http.StatusOK)

	bodies := b.seen.all()
	for _, never := range []string{hostKeyValue, hostKeyValue2, password, password2} {
		for _, body := range bodies {
			if strings.Contains(body, never) {
				t.Errorf("a response carries %q: %.300s", never, body)
			}
		}
	}
	for _, once := range []string{minted.Secret, rotated.Secret, token.Secret} {
		n := 0
		for _, body := range bodies {
			n += strings.Count(body, once)
		}
		if n != 1 {
			t.Errorf("minted credential %.12s… is in %d responses, want 1", once, n)
		}
	}

	logs := b.logs.String()
	if !strings.Contains(logs, "control api") {
		t.Fatalf("the log captured nothing: %q", logs)
	}
	audit, err := b.st.ListAuditLog(ctx, store.AuditLogPage{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var auditText bytes.Buffer
	for _, a := range audit {
		auditText.Write(a.Before)
		auditText.Write(a.After)
	}
	for _, secret := range []string{hostKeyValue, hostKeyValue2, password, password2, minted.Secret, rotated.Secret, token.Secret, s.csrf} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log carries %.12s…", secret)
		}
		if strings.Contains(auditText.String(), secret) {
			t.Errorf("the audit log carries %.12s…", secret)
		}
	}
	// Nor does the log carry a password hash or a sealed value.
	if strings.Contains(logs, "$argon2id$") || strings.Contains(auditText.String(), "$argon2id$") {
		t.Error("a password hash reached the log or the audit log")
	}
}
