package translator

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

func TestIDs_RoundTripThroughEveryCaller(t *testing.T) {
	t.Parallel()
	for _, up := range []string{"toolu_01RaX2WYWRWCbaeFHssmGJXG", "call_abc123", geminiCallID("r", 0, "", "sig")} {
		for _, prefix := range []string{chatCallPrefix, anthropicCallPrefix} {
			seen := callerID(prefix, up)
			if !strings.HasPrefix(seen, prefix) {
				t.Errorf("%s sees %q", prefix, seen)
			}
			if back := canonicalID(prefix, seen); back != up {
				t.Errorf("%s: %q → %q → %q", prefix, up, seen, back)
			}
		}
	}
	// The caller's own ids (from a native binding) stay as they are.
	for _, id := range []string{"call_abc", "toolu_01A", "anything"} {
		if canonicalID(chatCallPrefix, id) != id && !strings.HasPrefix(id, "call_toolu_") {
			t.Errorf("%q changed", id)
		}
	}
	if got := anthropicID("call with spaces"); got == "call with spaces" || anthropicID("call with spaces") != got || !strings.HasPrefix(got, "toolu_") {
		t.Errorf("anthropicID = %q", got)
	}
	long := strings.Repeat("x", 41)
	if got := openaiID(long); len(got) > 40 || openaiID(long) != got || openaiID("call_1") != "call_1" {
		t.Errorf("openaiID = %q", got)
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "{}", "  ": "{}", `{"a":1}`: `{"a":1}`} {
		if got, ok := argsObject(in); !ok || string(got) != want {
			t.Errorf("argsObject(%q) = %s %v", in, got, ok)
		}
	}
	for _, bad := range []string{"[1]", `{"a":`, "null", "1"} {
		if _, ok := argsObject(bad); ok {
			t.Errorf("argsObject(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"": "{}", "null": "{}", `{ "a" : 1 }`: `{"a":1}`} {
		if got := argsText(json.RawMessage(in)); got != want {
			t.Errorf("argsText(%q) = %q", in, got)
		}
	}
}

func TestDataURI(t *testing.T) {
	t.Parallel()
	if mt, data, ok := parseDataURI("data:image/png;base64,AAAA"); !ok || mt != "image/png" || data != "AAAA" || dataURI(mt, data) != "data:image/png;base64,AAAA" {
		t.Errorf("%q %q %v", mt, data, ok)
	}
	for _, bad := range []string{"https://x", "data:image/png,AAAA", "data:;base64,AA", "data:image/png;base64"} {
		if _, _, ok := parseDataURI(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if unb64(b64("héllo")) != "héllo" || unb64("!!") != "!!" {
		t.Error("b64")
	}
}

func TestUpstreamError_EveryProviderShape(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]canonical.Error{
		`{"error":{"message":"bad","type":"invalid_request_error","param":"n","code":"invalid_value"}}`: {Kind: canonical.ErrInvalidRequest, Status: 400, Message: "bad", Code: "invalid_value", Param: "n"},
		`{"type":"error","error":{"type":"invalid_request_error","message":"no"},"request_id":"req_1"}`: {Kind: canonical.ErrInvalidRequest, Status: 400, Message: "no", Code: "invalid_request_error"},
		`{"error":{"code":400,"message":"Invalid value","status":"INVALID_ARGUMENT","details":[]}}`:     {Kind: canonical.ErrInvalidRequest, Status: 400, Message: "Invalid value", Code: "INVALID_ARGUMENT"},
		`<html>Bad Gateway</html>`: {Kind: canonical.ErrInvalidRequest, Status: 400, Message: "The upstream answered 400."},
		`{"error":"plain"}`:        {Kind: canonical.ErrInvalidRequest, Status: 400, Message: "plain"},
	} {
		if got := upstreamError(400, []byte(body)); *got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", body, *got, want)
		}
	}
}

func TestDecodeErrors_NameTheField(t *testing.T) {
	t.Parallel()
	for body, param := range map[string]string{
		`{"model":"m","messages":"hi"}`:                                                                                       "messages",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"frob":1}`:                                                  "frob",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]}`:                             "messages[0].content[0].x",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{}}}`: "tool_choice",
		`{"model":"m","messages":[{"role":"function","content":"x"}]}`:                                                        "messages[0].role",
	} {
		_, err := Decode(wire.InboundChat, []byte(body))
		var we *wire.Error
		if !errors.As(err, &we) || we.Param != param {
			t.Errorf("%s: %v (param %q, want %q)", body, err, paramOf(err), param)
		}
	}
	if _, err := Decode(wire.InboundChat, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]} x`)); !errors.Is(err, wire.ErrMalformedRequest) {
		t.Errorf("trailing data: %v", err)
	}
	err := ForBinding(unsupported("frob", ""), Target{Shape: "gemini", Model: "m", Host: "h"})
	if !strings.Contains(err.Error(), `"m" on host "h" is bound in shape gemini`) {
		t.Errorf("ForBinding: %v", err)
	}
}

func paramOf(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Param
	}
	return ""
}
