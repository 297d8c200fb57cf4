package wire

import (
	"errors"
	"net/textproto"
	"testing"
)

func TestForwardsHeader_PerShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		shape Shape
		name  string
		want  bool
	}{
		{ShapeAnthropic, "Anthropic-Beta", true},
		{ShapeAnthropic, "Anthropic-Version", true},
		{ShapeAnthropic, "X-Stainless-Os", true},
		{ShapeAnthropic, "Openai-Beta", false},
		{ShapeOpenAI, "Openai-Beta", true},
		{ShapeOpenAIResponses, "X-Client-Request-Id", true},
		{ShapeOpenAI, "Anthropic-Beta", false},
		{ShapeOpenAI, "Idempotency-Key", false},
		{ShapeGemini, "X-Goog-Api-Client", true},
		{ShapeGemini, "X-Stainless-Os", false},
		{ShapeGemini, "User-Agent", true},
		{ShapeOpenAI, "X-Custom", false},
		{ShapeOpenAI, "Openai-Organization", false},
	}
	for _, tc := range cases {
		if got := ForwardsHeader(tc.shape, tc.name); got != tc.want {
			t.Errorf("ForwardsHeader(%s, %s) = %v", tc.shape, tc.name, got)
		}
	}
}

// No header a shape forwards by itself is one that must never be forwarded.
func TestForwardsHeader_NeverForwardedWins(t *testing.T) {
	t.Parallel()
	for _, s := range []Shape{ShapeOpenAI, ShapeOpenAIResponses, ShapeAnthropic, ShapeGemini} {
		for _, n := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "X-Goog-User-Project",
			"Openai-Organization", "Openai-Project", "Content-Encoding", "Content-Type", "X-Forwarded-For", "Forwarded", "X-Mock-Fault", "X-Relay-Route"} {
			if ForwardsHeader(s, n) || !NeverForwarded(n) {
				t.Errorf("%s: %s forwarded", s, n)
			}
		}
	}
}

func TestCheckForwardHeaders_RefusesCredentialsAndBilling(t *testing.T) {
	t.Parallel()
	cases := []struct {
		names []string
		want  []string
		ok    bool
	}{
		{[]string{"x-app", "Idempotency-Key"}, []string{"X-App", "Idempotency-Key"}, true},
		{[]string{"x-goog-user-project"}, nil, false},
		{[]string{"api-key"}, nil, false},
		{[]string{"OpenAI-Organization"}, nil, false},
		{[]string{"x-forwarded-for"}, nil, false},
		{[]string{"X-Mock-Fault"}, nil, false},
		{[]string{"content-encoding"}, nil, false},
		{[]string{"bad name"}, nil, false},
		{[]string{""}, nil, false},
		{[]string{"x-app", "X-App"}, nil, false},
	}
	for _, tc := range cases {
		got, err := CheckForwardHeaders(tc.names)
		if (err == nil) != tc.ok || tc.ok && len(got) != len(tc.want) {
			t.Errorf("%v: %v, %v", tc.names, got, err)
			continue
		}
		if err != nil && !errors.Is(err, ErrHeaderNotForwardable) {
			t.Errorf("%v: %v does not wrap ErrHeaderNotForwardable", tc.names, err)
		}
		for i := range tc.want {
			if got[i] != tc.want[i] {
				t.Errorf("%v: %v", tc.names, got)
			}
		}
	}
	many := make([]string, MaxForwardHeaders+1)
	for i := range many {
		many[i] = "X-H" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	if _, err := CheckForwardHeaders(many); err == nil {
		t.Error("too many names accepted")
	}
}

// Whatever CheckForwardHeader accepts is canonical and never a header
// NeverForwarded names.
func FuzzCheckForwardHeader(f *testing.F) {
	for _, s := range []string{"x-app", "X-Goog-User-Project", "x-forwarded-for", "api-key", "a b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := CheckForwardHeader(s)
		if err != nil {
			return
		}
		if NeverForwarded(c) || textproto.CanonicalMIMEHeaderKey(c) != c || !isToken(c) {
			t.Fatalf("%q accepted as %q", s, c)
		}
	})
}
