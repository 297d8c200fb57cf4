package proxy_test

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/snapshot"
)

// guardFixture is the standard catalog with guardrails on the fixture's
// policy, and a second project under a policy of its own without any.
func guardFixture(t *testing.T, rules ...guardrail.RuleSettings) *fixture {
	t.Helper()
	f := newFixture(t)
	f.standard()
	s := guardrail.Settings{Rules: rules}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	f.policy.Guardrails = g
	open := *f.policy
	open.ID, open.Slug, open.Guardrails = f.id(), "open", nil
	f.data.Policies = append(f.data.Policies, &open)
	other := &snapshot.Project{ID: f.id(), TeamID: f.data.Teams[0].ID, Slug: "other"}
	sa := &snapshot.ServiceAccount{ID: f.id(), ProjectID: other.ID, Slug: "other-app", PolicyID: open.ID}
	f.data.Projects = append(f.data.Projects, other)
	f.data.ServiceAccounts = append(f.data.ServiceAccounts, sa)
	f.data.RelayKeys = append(f.data.RelayKeys, &snapshot.RelayKey{ID: f.id(), Hash: sha256.Sum256([]byte(otherProjectKey)),
		DisplayPrefix: otherProjectKey[:10], ProjectID: other.ID, ServiceAccountID: sa.ID})
	f.secrets = append(f.secrets, otherProjectKey)
	return f
}

// guardCase is one inbound shape (and binding) with a user text in it.
type guardCase struct {
	name, path, model string
	body              func(text string, stream bool) string
}

func guardCases() []guardCase {
	chat := func(model string) func(string, bool) string {
		return func(text string, stream bool) string {
			return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, text)
		}
	}
	return []guardCase{
		{"chat", "/v1/chat/completions", "gpt-test", chat("gpt-test")},
		{"chat→anthropic", "/v1/chat/completions", "claude-test", chat("claude-test")},
		{"messages", "/v1/messages", "claude-test", func(text string, stream bool) string {
			return fmt.Sprintf(`{"model":"claude-test","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, text)
		}},
		{"responses", "/v1/responses", "resp-test", func(text string, stream bool) string {
			return fmt.Sprintf(`{"model":"resp-test","stream":%v,"input":%q}`, stream, text)
		}},
		{"generate", "/v1/generate", "claude-test", chat("claude-test")},
	}
}

const guardSecret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"

// TestGuardrails_InputBlockInEveryShape: a request a blocking rule finds
// is refused in the caller's shape, naming the rule and never the text,
// and nothing goes upstream; another project's policy without the rule
// sends the same request on.
func TestGuardrails_InputBlockInEveryShape(t *testing.T) {
	t.Parallel()
	for _, tc := range guardCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := guardFixture(t, guardrail.RuleSettings{Name: "secrets", Stage: guardrail.StageInput, Action: guardrail.ActionBlock,
				Detectors: []guardrail.Kind{guardrail.Secret}})
			f.start()
			for _, stream := range []bool{false, true} {
				resp, body := f.post(tc.path, tc.body("use "+guardSecret+" please", stream), nil)
				e := decodeError(t, body)
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error.Message, `guardrail "secrets" (secret found)`) {
					t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, body)
				}
				if strings.Contains(body, "abcdefghij") {
					t.Errorf("the refusal holds the matched text: %s", body)
				}
				if tc.path == "/v1/messages" && (e.Type != "error" || e.Error.Type != "invalid_request_error") {
					t.Errorf("not Anthropic's shape: %s", body)
				} else if tc.path != "/v1/messages" && e.Error.Code != "guardrail_blocked" {
					t.Errorf("code %q: %s", e.Error.Code, body)
				}
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("upstream saw %d requests", n)
			}
			resp, body := f.post(tc.path, tc.body("use "+guardSecret+" please", false), map[string]string{"Authorization": "Bearer " + otherProjectKey})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the other project's policy: %d %s", resp.StatusCode, body)
			}
			if r := f.requests(); len(r) != 1 || !strings.Contains(string(r[0].Body), guardSecret) {
				t.Errorf("the other project's request did not go upstream as sent")
			}
		})
	}
}

// TestGuardrails_RedactRoundTripInEveryShape: the upstream gets
// placeholders, and the answer, whole or streamed, gets the originals back
// where the model echoed a placeholder.
func TestGuardrails_RedactRoundTripInEveryShape(t *testing.T) {
	t.Parallel()
	for _, tc := range guardCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := guardFixture(t, guardrail.RuleSettings{Name: "pii", Stage: guardrail.StageInput, Action: guardrail.ActionRedact,
				Detectors: []guardrail.Kind{guardrail.Email}})
			f.start()
			for i, stream := range []bool{false, true} {
				resp, body := f.post(tc.path, tc.body("mail jane@example.com", stream), nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, body)
				}
				up := f.requests()[i]
				if strings.Contains(string(up.Body), "jane@example.com") || !strings.Contains(string(up.Body), "«EMAIL_1»") {
					t.Errorf("stream %v: upstream got %s", stream, up.Body)
				}
				if !strings.Contains(body, "jane@example.com") || strings.Contains(body, "EMAIL_1") {
					t.Errorf("stream %v: answer not restored: %s", stream, body)
				}
			}
		})
	}
}

// TestGuardrails_OutputBlockSplitAcrossEvents: the mock streams its echo
// word by word, so the card is four events; the stream ends with an error
// event and no digit of the card reaches the caller, whole or streamed,
// read raw or by openai-go.
func TestGuardrails_OutputBlockSplitAcrossEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range guardCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := guardFixture(t, guardrail.RuleSettings{Name: "cards", Stage: guardrail.StageOutput, Action: guardrail.ActionBlock,
				Detectors: []guardrail.Kind{guardrail.Card}})
			f.start()
			text := "pay 4111 1111 1111 1111"
			resp, body := f.post(tc.path, tc.body(text, false), nil)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `guardrail \"cards\" (card found)`) || strings.Contains(body, "4111") {
				t.Errorf("whole: %d %s", resp.StatusCode, body)
			}
			resp, body = f.post(tc.path, tc.body(text, true), nil)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `guardrail \"cards\" (card found)`) {
				t.Errorf("stream: %d %s", resp.StatusCode, body[max(0, len(body)-400):])
			}
			if strings.Contains(body, "4111") || strings.Contains(body, "1111") {
				t.Errorf("stream released the card: %s", body)
			}
			rec := f.rec.next(t)
			if rec = f.rec.next(t); rec.ErrorKind != "guardrail_blocked" {
				t.Errorf("stream record error kind %q", rec.ErrorKind)
			}
		})
	}
	f := guardFixture(t, guardrail.RuleSettings{Name: "cards", Stage: guardrail.StageOutput, Action: guardrail.ActionBlock,
		Detectors: []guardrail.Kind{guardrail.Card}})
	f.start()
	s := f.openai().Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("pay 4111 1111 1111 1111")},
	})
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "cards") {
		t.Errorf("openai-go: stream error %v", s.Err())
	}
	if len(acc.Choices) > 0 && strings.Contains(acc.Choices[0].Message.Content, "4111") {
		t.Errorf("openai-go accumulated %q", acc.Choices[0].Message.Content)
	}
}

// TestGuardrails_OutputRedactInOneEvent: an e-mail the answer carries in
// one event is replaced in that event; the other project is untouched.
func TestGuardrails_OutputRedactInOneEvent(t *testing.T) {
	t.Parallel()
	f := guardFixture(t, guardrail.RuleSettings{Name: "pii", Stage: guardrail.StageOutput, Action: guardrail.ActionRedact,
		Detectors: []guardrail.Kind{guardrail.Email}})
	f.start()
	for _, tc := range guardCases() {
		for _, stream := range []bool{false, true} {
			resp, body := f.post(tc.path, tc.body("mail ops@example.com", stream), nil)
			if resp.StatusCode != http.StatusOK || strings.Contains(body, "ops@example.com") || !strings.Contains(body, "«EMAIL_1»") {
				t.Errorf("%s stream %v: %d %s", tc.name, stream, resp.StatusCode, body)
			}
		}
	}
	resp, body := f.post("/v1/chat/completions", guardCases()[0].body("mail ops@example.com", false), map[string]string{"Authorization": "Bearer " + otherProjectKey})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "ops@example.com") {
		t.Errorf("the other project's answer was changed: %s", body)
	}
}

// TestGuardrails_PromptCeilingAndUnreadable: max_prompt_bytes refuses a
// large body; settings the loader could not read refuse every request.
func TestGuardrails_PromptCeilingAndUnreadable(t *testing.T) {
	t.Parallel()
	f := guardFixture(t)
	f.policy.Guardrails = &guardrail.Policy{MaxPromptBytes: 100}
	f.start()
	resp, body := f.post("/v1/chat/completions", guardCases()[0].body(strings.Repeat("x", 200), false), nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "max_prompt_bytes") {
		t.Errorf("ceiling: %d %s", resp.StatusCode, body)
	}
	resp, body = f.post("/v1/chat/completions", guardCases()[0].body("short", false), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("under the ceiling: %d %s", resp.StatusCode, body)
	}
	g := guardFixture(t)
	g.policy.Guardrails = guardrail.Unreadable()
	g.start()
	if resp, body := g.post("/v1/chat/completions", guardCases()[0].body("hi", false), nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unreadable settings served: %d %s", resp.StatusCode, body)
	}
	if n := len(g.requests()); n != 0 {
		t.Errorf("upstream saw %d requests", n)
	}
}
