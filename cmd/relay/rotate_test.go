package main

import (
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/demo"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

func TestRotateMasterKey_ResealsEveryHostKey(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	oldText, newText := secret.NewKey(), secret.NewKey()
	oldKey, _ := secret.ParseKey(oldText)
	newKey, _ := secret.ParseKey(newText)
	oldBox, _ := secret.NewBox(oldKey)
	newBox, _ := secret.NewBox(newKey)
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := demo.Seed(ctx, st, oldBox, demo.Options{MockBaseURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RELAY_DATABASE_URL": db, "RELAY_MASTER_KEY": oldText}
	var out strings.Builder
	err = run(ctx, []string{"rotate-master-key", "--new-key", newText}, func(k string) string { return env[k] }, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), "resealed 2 host keys") {
		t.Fatalf("rotate: %v %q", err, out.String())
	}
	keys, err := st.HostKeys().List(ctx, store.HostKeysPage{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if v, err := newBox.Open(k.SecretCiphertext); err != nil || !strings.HasPrefix(v, "sk-mock-demo-") {
			t.Fatalf("host key %s not readable under the new key: %v", k.Slug, err)
		}
		if _, err := oldBox.Open(k.SecretCiphertext); err == nil {
			t.Fatalf("host key %s still opens under the old key", k.Slug)
		}
		if k.SecretVersion != 1 {
			t.Fatalf("reseal changed the secret version: %d", k.SecretVersion)
		}
	}
	// A wrong old key changes nothing.
	env["RELAY_MASTER_KEY"] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	if err := run(ctx, []string{"rotate-master-key", "--new-key", newText}, func(k string) string { return env[k] }, io.Discard, io.Discard); err == nil {
		t.Fatal("rotated with the wrong old key")
	}
}
