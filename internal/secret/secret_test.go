package secret

import (
	"strings"
	"testing"
)

func TestBox_SealOpenRoundTrip(t *testing.T) {
	key, err := ParseKey(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	box, err := NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal("sk-live-123")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "sk-live-123") {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := box.Open(sealed)
	if err != nil || got != "sk-live-123" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := NewBox(make([]byte, KeySize))
	if _, err := other.Open(sealed); err == nil {
		t.Fatal("opened with the wrong key")
	}
	if _, err := box.Open(sealed[:5]); err == nil {
		t.Fatal("opened a truncated value")
	}
}

func TestBox_ResolveEnvReference(t *testing.T) {
	box, _ := NewBox(nil)
	ref := "env:PROVIDER_KEY"
	env := map[string]string{"PROVIDER_KEY": "v"}
	got, err := box.Resolve(&ref, nil, func(k string) string { return env[k] })
	if err != nil || got != "v" {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	missing := "env:MISSING"
	if _, err := box.Resolve(&missing, nil, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "MISSING") {
		t.Fatalf("missing variable error = %v", err)
	}
	if _, err := box.Resolve(nil, []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), nil); err != ErrNoMasterKey {
		t.Fatalf("sealed without key = %v", err)
	}
}

func TestParseKey_RejectsWrongLength(t *testing.T) {
	if _, err := ParseKey("c2hvcnQ="); err == nil {
		t.Fatal("accepted a short key")
	}
	if _, err := ParseKey("%%%"); err == nil {
		t.Fatal("accepted invalid base64")
	}
}

func TestRotatingBox_OpensValuesSealedUnderThePreviousKey(t *testing.T) {
	oldKey, _ := ParseKey(NewKey())
	newKey, _ := ParseKey(NewKey())
	oldBox, _ := NewBox(oldKey)
	sealed, _ := oldBox.Seal("v")
	rot, err := NewRotatingBox(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rot.Open(sealed); err != nil || got != "v" {
		t.Fatalf("Open old value = %q, %v", got, err)
	}
	resealed, _ := rot.Seal("v")
	if _, err := oldBox.Open(resealed); err == nil {
		t.Fatal("new values must be sealed under the new key")
	}
}
