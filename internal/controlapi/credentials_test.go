package controlapi_test

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/nullable"
)

var relayKeySecret = regexp.MustCompile(`^sk-wr-[A-Za-z0-9_-]{64}$`)

func TestRelayKeys_MintListUpdateDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	tm := b.team("t")
	p := b.project(tm.ID, "p")
	sa := b.serviceAccount(p.ID, "sa")
	pol := b.policy("pol")

	var keys []uuid.UUID
	for i := range 5 {
		r := call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{
			ProjectID: p.ID, ServiceAccountID: &sa.ID, Name: ptr(fmt.Sprint("key ", i)), PolicyID: &pol.ID,
		})).want(t, http.StatusCreated).JSON201
		if !relayKeySecret.MatchString(r.Secret) || r.RelayKey.DisplayPrefix != r.Secret[:12] || r.RelayKey.Status != models.CredentialStatusActive {
			t.Errorf("minted %q as %+v", r.Secret, r.RelayKey)
		}
		// Only the hash is stored.
		row, err := b.st.RelayKeys().Get(ctx, r.RelayKey.ID)
		if sum := sha256.Sum256([]byte(r.Secret)); err != nil || string(row.KeyHash) != string(sum[:]) {
			t.Errorf("stored hash does not match the secret (%v)", err)
		}
		keys = append(keys, r.RelayKey.ID)
	}
	wantPages(t, "relay keys", keys, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListRelayKeysWithResponse(ctx, &models.ListRelayKeysParams{Limit: limit2, Cursor: cur, ServiceAccountID: &sa.ID})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(k models.RelayKey) uuid.UUID { return k.ID }), r.NextCursor
	})
	exp := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	u := call(c.UpdateRelayKeyWithResponse(ctx, keys[0], models.RelayKeyUpdate{
		Name: ptr("renamed"), PolicyID: nullable.Null[uuid.UUID](), Priority: nullable.Value[int32](7), ExpiresAt: nullable.Value(exp),
	})).want(t, http.StatusOK).JSON200
	if u.Name != "renamed" || u.PolicyID != nil || u.Priority == nil || *u.Priority != 7 || u.ExpiresAt == nil || !u.ExpiresAt.Equal(exp) {
		t.Errorf("update = %+v", u)
	}
	u = call(c.UpdateRelayKeyWithResponse(ctx, keys[0], models.RelayKeyUpdate{ExpiresAt: nullable.Null[time.Time]()})).want(t, http.StatusOK).JSON200
	if u.ExpiresAt != nil || u.Priority == nil {
		t.Errorf("clearing the expiry = %+v", u)
	}

	call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "service_account_id")
	call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID, ExpiresAt: ptr(time.Now().Add(-time.Minute))})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "expires_at")
	call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID, PolicyID: ptr(uuid.New())})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "policy_id")
	other := b.project(tm.ID, "other")
	call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: other.ID, ServiceAccountID: &sa.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "service_account_id")
	// A policy a key names cannot be deleted.
	call(c.DeletePolicyWithResponse(ctx, pol.ID)).wantErr(t, http.StatusConflict, "conflict", "")

	rk := call(c.RevokeRelayKeyWithResponse(ctx, keys[1])).want(t, http.StatusOK).JSON200
	if rk.RevokedAt == nil || rk.Status != models.CredentialStatusRevoked {
		t.Errorf("revoke = %+v", rk)
	}
	again := call(c.RevokeRelayKeyWithResponse(ctx, keys[1])).want(t, http.StatusOK).JSON200
	if !again.RevokedAt.Equal(*rk.RevokedAt) {
		t.Errorf("a second revoke moved revoked_at from %v to %v", rk.RevokedAt, again.RevokedAt)
	}
	call(c.DeleteRelayKeyWithResponse(ctx, keys[2])).want(t, http.StatusNoContent)
	call(c.GetRelayKeyWithResponse(ctx, keys[2])).wantErr(t, http.StatusNotFound, "not_found", "")
	if g := call(c.GetRelayKeyWithResponse(ctx, keys[3])).want(t, http.StatusOK).JSON200; g.ID != keys[3] || g.Status != models.CredentialStatusActive {
		t.Errorf("get = %+v", g)
	}
}

func TestRelayKeys_RotateWithGrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	p := b.project(b.team("t").ID, "p")
	sa := b.serviceAccount(p.ID, "sa")
	pol := b.policy("pol")
	expires := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	orig := call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{
		ProjectID: p.ID, ServiceAccountID: &sa.ID, Name: ptr("ci"), PolicyID: &pol.ID, Priority: ptr[int32](4), ExpiresAt: &expires,
	})).want(t, http.StatusCreated).JSON201

	before := time.Now()
	rot := call(c.RotateRelayKeyWithResponse(ctx, orig.RelayKey.ID, models.RelayKeyRotate{GraceSeconds: 3600})).want(t, http.StatusCreated).JSON201
	after := time.Now()
	prev, next := rot.Previous, rot.RelayKey
	if !relayKeySecret.MatchString(rot.Secret) || rot.Secret == orig.Secret || next.ID == prev.ID {
		t.Fatalf("rotate minted %q (%s), old %s", rot.Secret, next.ID, prev.ID)
	}
	// The old key keeps working for the grace period: expires_at = now + grace, not revoked.
	if prev.RevokedAt != nil || prev.Status != models.CredentialStatusActive || prev.ExpiresAt == nil ||
		prev.ExpiresAt.Before(before.Add(time.Hour-time.Second)) || prev.ExpiresAt.After(after.Add(time.Hour+time.Second)) {
		t.Errorf("old key after rotation = %+v", prev)
	}
	// The new key copies the settings, with the old key's own expiry.
	if next.Name != "ci" || next.ServiceAccountID == nil || *next.ServiceAccountID != sa.ID || next.PolicyID == nil || *next.PolicyID != pol.ID ||
		next.Priority == nil || *next.Priority != 4 || next.ExpiresAt == nil || !next.ExpiresAt.Equal(expires) || next.Status != models.CredentialStatusActive {
		t.Errorf("new key = %+v", next)
	}
	// The rows say the same.
	row, err := b.st.RelayKeys().Get(ctx, prev.ID)
	if err != nil || row.RevokedAt != nil || row.ExpiresAt == nil || !row.ExpiresAt.Equal(*prev.ExpiresAt) {
		t.Errorf("old row = %+v, %v", row, err)
	}

	// A longer grace than the remaining life never extends the old key.
	short := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	k2 := call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID, ExpiresAt: &short})).want(t, http.StatusCreated).JSON201
	r2 := call(c.RotateRelayKeyWithResponse(ctx, k2.RelayKey.ID, models.RelayKeyRotate{GraceSeconds: 86400})).want(t, http.StatusCreated).JSON201
	if r2.Previous.ExpiresAt == nil || !r2.Previous.ExpiresAt.Equal(short) {
		t.Errorf("grace extended the old key: %v, want %v", r2.Previous.ExpiresAt, short)
	}

	// Grace 0 revokes at once; a revoked key cannot be rotated.
	r3 := call(c.RotateRelayKeyWithResponse(ctx, next.ID, models.RelayKeyRotate{GraceSeconds: 0})).want(t, http.StatusCreated).JSON201
	if r3.Previous.RevokedAt == nil || r3.Previous.Status != models.CredentialStatusRevoked {
		t.Errorf("grace 0 left the old key %+v", r3.Previous)
	}
	call(c.RotateRelayKeyWithResponse(ctx, next.ID, models.RelayKeyRotate{GraceSeconds: 60})).wantErr(t, http.StatusConflict, "conflict", "")
	call(c.RotateRelayKeyWithResponse(ctx, uuid.New(), models.RelayKeyRotate{GraceSeconds: 60})).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.RotateRelayKeyWithResponse(ctx, next.ID, models.RelayKeyRotate{GraceSeconds: -1})).wantErr(t, http.StatusBadRequest, "invalid_request", "grace_seconds")
}

func TestInferenceTokens_MintListRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	tm := b.team("t")
	p, q := b.project(tm.ID, "p"), b.project(tm.ID, "q")
	dev := b.newUser("dev")
	b.grant(dev.user.ID, models.RoleDeveloper, nil, &p.ID)

	var toks []uuid.UUID
	for i := range 5 {
		req := models.InferenceTokenCreate{ProjectID: p.ID}
		if i == 1 {
			req.TTLSeconds = ptr[int32](86400)
		}
		start := time.Now()
		r := call(dev.CreateInferenceTokenWithResponse(ctx, req)).want(t, http.StatusCreated).JSON201
		ttl := time.Hour
		if i == 1 {
			ttl = 24 * time.Hour
		}
		if r.Secret == "" || r.InferenceToken.UserID != dev.user.ID || r.InferenceToken.ProjectID != p.ID ||
			r.InferenceToken.ExpiresAt.Before(start.Add(ttl-time.Second)) || r.InferenceToken.ExpiresAt.After(time.Now().Add(ttl+time.Second)) {
			t.Errorf("token %d = %+v", i, r.InferenceToken)
		}
		toks = append(toks, r.InferenceToken.ID)
	}
	call(dev.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: p.ID, TTLSeconds: ptr[int32](86401)})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "ttl_seconds")
	// A project the user cannot see is "no such project"; the admin token has no user.
	call(dev.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: q.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "project_id")
	call(b.admin.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: p.ID})).
		wantErr(t, http.StatusForbidden, "forbidden", "")

	wantPages(t, "own tokens", toks, func(cur *string) ([]uuid.UUID, *string) {
		r := call(dev.ListInferenceTokensWithResponse(ctx, &models.ListInferenceTokensParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(x models.InferenceToken) uuid.UUID { return x.ID }), r.NextCursor
	})
	// Another developer of the project sees none of them and cannot revoke them.
	dev2 := b.newUser("dev2")
	b.grant(dev2.user.ID, models.RoleDeveloper, nil, &p.ID)
	if r := call(dev2.ListInferenceTokensWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200; len(r.Items) != 0 {
		t.Errorf("dev2 sees %d tokens", len(r.Items))
	}
	call(dev2.RevokeInferenceTokenWithResponse(ctx, toks[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	// The admin token sees all.
	if r := call(b.admin.ListInferenceTokensWithResponse(ctx, &models.ListInferenceTokensParams{UserID: &dev.user.ID})).want(t, http.StatusOK).JSON200; len(r.Items) != 5 {
		t.Errorf("admin sees %d tokens", len(r.Items))
	}

	call(dev.RevokeInferenceTokenWithResponse(ctx, toks[0])).want(t, http.StatusNoContent)
	r := call(dev.ListInferenceTokensWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200
	for _, it := range r.Items {
		if it.ID == toks[0] && (it.RevokedAt == nil || it.Status != models.CredentialStatusRevoked) {
			t.Errorf("revoked token = %+v", it)
		}
	}
	call(dev.RevokeInferenceTokenWithResponse(ctx, uuid.New())).wantErr(t, http.StatusNotFound, "not_found", "")
}
