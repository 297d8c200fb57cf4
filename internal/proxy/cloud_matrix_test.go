package proxy_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// cloudMatrixFixture is a Relay with three cloud models on the mock: a
// bedrock_converse binding on the Bedrock face ("cm-bedrock"), and Gemini
// and Claude on the Vertex face ("cm-vx-gemini", "cm-vx-claude"), whose
// service-account tokens the mock's Google token endpoint issues.
func cloudMatrixFixture(t *testing.T) *fixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	return bedrockFixture(t, func(f *fixture, bedrock *snapshot.Host) {
		cloud := mockupstream.NewCloud(f.mock, mockupstream.CloudOptions{
			ServiceAccounts: map[string]*rsa.PublicKey{saEmail: &key.PublicKey},
			Now:             f.clock.Now,
		})
		srv := httptest.NewServer(cloud)
		t.Cleanup(srv.Close)
		sa, _ := json.Marshal(map[string]string{
			"type": "service_account", "project_id": "proj-1", "private_key_id": "k1", "private_key": pemKey,
			"client_email": saEmail, "token_uri": srv.URL + "/oauth/google/token",
		})
		f.secrets = append(f.secrets, strings.Split(strings.TrimSpace(pemKey), "\n")[1])
		vx := f.host("vertex", func(h *snapshot.Host) {
			h.BaseURL, h.Profile = srv.URL+"/v1", "vertex"
			h.ProfileParams = map[string]string{"project": "proj-1", "location": "us-central1"}
		})
		f.key(vx, "vx-1", string(sa))
		f.bind(f.model("cm-bedrock", true), bedrock, wire.ShapeBedrockConverse, "meta.llama3-70b-instruct-v1:0")
		f.bind(f.model("cm-vx-gemini", true), vx, wire.ShapeGemini, "gemini-2.0-flash")
		f.bind(f.model("cm-vx-claude", true), vx, wire.ShapeAnthropic, "claude-sonnet-4@20250514")
	})
}

// matrixShape is one inbound shape of the tool round trip: its first
// turn, how its answer names the tool call, and its second turn carrying
// the call and the tool's result.
type matrixShape struct {
	name   string
	path   func(model string, stream bool) string
	header map[string]string
	first  func(model string, stream bool) string
	callID *regexp.Regexp // the first submatch is the call's id
	second func(model string, stream bool, id string) string
}

// toolResult is what the tool returned; the mock's answer to a turn that
// carries a tool result quotes it ("The tool returned: …").
const toolResult = "Zephyrine 21C"

func streamMember(stream bool) string {
	if stream {
		return `,"stream":true`
	}
	return ""
}

func matrixShapes() []matrixShape {
	chatPath := func(string, bool) string { return "/v1/chat/completions" }
	weather := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	return []matrixShape{
		{
			name: "chat", path: chatPath, first: toolChatBody,
			callID: regexp.MustCompile(`"tool_calls":\[\{(?:"index":0,)?"id":"([^"]+)"`),
			second: func(model string, stream bool, id string) string {
				return `{"model":"` + model + `"` + streamMember(stream) + `,"messages":[{"role":"user","content":"weather in Paris?"},` +
					`{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
					`{"role":"tool","tool_call_id":"` + id + `","content":"` + toolResult + `"}],` +
					`"tools":[{"type":"function","function":{"name":"get_weather","parameters":` + weather + `}}]}`
			},
		},
		{
			name: "responses", path: func(string, bool) string { return "/v1/responses" }, first: toolResponsesBody,
			callID: regexp.MustCompile(`"call_id":"([^"]+)"`),
			second: func(model string, stream bool, id string) string {
				return `{"model":"` + model + `"` + streamMember(stream) + `,"store":false,"input":[{"role":"user","content":"weather in Paris?"},` +
					`{"type":"function_call","call_id":"` + id + `","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
					`{"type":"function_call_output","call_id":"` + id + `","output":"` + toolResult + `"}],` +
					`"tools":[{"type":"function","name":"get_weather","parameters":` + weather + `}]}`
			},
		},
		{
			name: "messages", path: func(string, bool) string { return "/v1/messages" },
			header: map[string]string{"Authorization": "", "X-Api-Key": relayKey},
			first:  toolMessagesBody,
			callID: regexp.MustCompile(`"type":"tool_use","id":"([^"]+)"`),
			second: func(model string, stream bool, id string) string {
				return `{"model":"` + model + `","max_tokens":64` + streamMember(stream) + `,"messages":[{"role":"user","content":"weather in Paris?"},` +
					`{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"get_weather","input":{"city":"Paris"}}]},` +
					`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + toolResult + `"}]}],` +
					`"tools":[{"name":"get_weather","input_schema":` + weather + `}]}`
			},
		},
		{
			name: "gemini",
			path: func(model string, stream bool) string {
				if stream {
					return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
				}
				return "/v1beta/models/" + model + ":generateContent"
			},
			header: map[string]string{"Authorization": "", "X-Goog-Api-Key": relayKey},
			first: func(string, bool) string {
				return `{"contents":[{"role":"user","parts":[{"text":"weather in Paris?"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":` + weather + `}]}]}`
			},
			// Gemini's calls carry an id where the upstream gave one.
			callID: regexp.MustCompile(`"functionCall":\{(?:"id":"([^"]+)",)?"name":"get_weather"`),
			second: func(_ string, _ bool, id string) string {
				idm := ""
				if id != "" {
					idm = `"id":"` + id + `",`
				}
				return `{"contents":[{"role":"user","parts":[{"text":"weather in Paris?"}]},` +
					`{"role":"model","parts":[{"functionCall":{` + idm + `"name":"get_weather","args":{"city":"Paris"}}}]},` +
					`{"role":"user","parts":[{"functionResponse":{` + idm + `"name":"get_weather","response":{"result":"` + toolResult + `"}}}]}],` +
					`"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":` + weather + `}]}]}`
			},
		},
		{
			name: "generate", path: func(string, bool) string { return "/v1/generate" },
			first: func(model string, stream bool) string {
				return `{"model":"` + model + `"` + streamMember(stream) + `,"messages":[{"role":"user","content":"weather in Paris?"}],"tools":[{"name":"get_weather","parameters":` + weather + `}]}`
			},
			callID: regexp.MustCompile(`"type":"tool_call","id":"([^"]+)"`),
			second: func(model string, stream bool, id string) string {
				return `{"model":"` + model + `"` + streamMember(stream) + `,"messages":[{"role":"user","content":"weather in Paris?"},` +
					`{"role":"assistant","content":[{"type":"tool_call","id":"` + id + `","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]},` +
					`{"role":"tool","content":[{"type":"tool_result","tool_call_id":"` + id + `","content":"` + toolResult + `"}]}],` +
					`"tools":[{"name":"get_weather","parameters":` + weather + `}]}`
			},
		},
	}
}

// Every inbound shape × the cloud shapes (bedrock_converse on Bedrock,
// Gemini and Claude on Vertex) × plain and streamed: the first turn asks
// with a tool and gets a call in the caller's shape; the second sends the
// call back with the tool's result, which reaches the upstream in its own
// shape (the mock's answer quotes it) and pairs with the call there.
func TestCloudMatrix_ToolRoundTrip(t *testing.T) {
	t.Parallel()
	f := cloudMatrixFixture(t)
	models := []string{"cm-bedrock", "cm-vx-gemini", "cm-vx-claude"}
	for _, sh := range matrixShapes() {
		for _, model := range models {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s→%s/stream=%v", sh.name, model, stream), func(t *testing.T) {
					resp, body := f.post(sh.path(model, stream), sh.first(model, stream), sh.header)
					m := sh.callID.FindStringSubmatch(body)
					if resp.StatusCode != http.StatusOK || m == nil {
						t.Fatalf("first turn: %d, no tool call in %.600s", resp.StatusCode, body)
					}
					id := m[1]
					if id == "" && sh.name != "gemini" {
						t.Fatalf("first turn: a tool call with no id: %.600s", body)
					}
					before := len(f.requests())
					resp, body = f.post(sh.path(model, stream), sh.second(model, stream, id), sh.header)
					if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Zephyrine") {
						t.Fatalf("second turn: %d, the tool's result is not in the answer: %.600s", resp.StatusCode, body)
					}
					if !stream && !strings.Contains(body, "The tool returned") {
						t.Errorf("second turn: the upstream did not take it as a tool result: %.600s", body)
					}
					// The upstream got the result in its own shape.
					var up mockupstream.Request
					for _, r := range f.requests()[before:] {
						if strings.Contains(string(r.Body), toolResult) {
							up = r
						}
					}
					want := map[string]string{"cm-bedrock": `"toolResult"`, "cm-vx-gemini": `"functionResponse"`, "cm-vx-claude": `"tool_result"`}[model]
					if !strings.Contains(string(up.Body), want) {
						t.Errorf("the upstream's request carries no %s: %.600s", want, up.Body)
					}
				})
			}
		}
	}
}
