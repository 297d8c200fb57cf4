package mockupstream_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// agentTools are the tools of an agent, a launcher first as Claude Code
// lists Agent: Relay's demo must not call it on a guess.
var agentTools = []string{"Agent", "Bash", "Edit", "Read", "Glob", "ToolSearch", "exec_command", "get_weather", "list_directory", "write_file"}

// toolTurn sends one user turn offering agentTools, in the given shape, and
// returns the names of the tools the model called.
func toolTurn(t *testing.T, b bundle, shape, user, choice string) []string {
	t.Helper()
	schema := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
	var tools []string
	for _, n := range agentTools {
		switch shape {
		case "chat":
			tools = append(tools, `{"type":"function","function":{"name":"`+n+`","parameters":`+schema+`}}`)
		case "responses":
			tools = append(tools, `{"type":"function","name":"`+n+`","parameters":`+schema+`}`)
		case "anthropic":
			tools = append(tools, `{"name":"`+n+`","input_schema":`+schema+`}`)
		case "gemini":
			tools = append(tools, `{"name":"`+n+`","parameters":`+schema+`}`)
		}
	}
	u, _ := json.Marshal(user)
	list := strings.Join(tools, ",")
	var names []string
	switch shape {
	case "chat":
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":` + string(u) + `}],"tools":[` + list + `]` + choice + `}`
		_, out := post(t, b.srv.URL+"/v1/chat/completions", openAIHeaders, body)
		var r struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						Function struct{ Name string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		mustJSON(t, out, &r)
		for _, c := range r.Choices[0].Message.ToolCalls {
			names = append(names, c.Function.Name)
		}
	case "responses":
		body := `{"model":"gpt-4.1-mini","input":` + string(u) + `,"tools":[` + list + `]` + choice + `}`
		_, out := post(t, b.srv.URL+"/v1/responses", openAIHeaders, body)
		var r struct {
			Output []struct{ Type, Name string } `json:"output"`
		}
		mustJSON(t, out, &r)
		for _, o := range r.Output {
			if o.Type == "function_call" {
				names = append(names, o.Name)
			}
		}
	case "anthropic":
		body := `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":` + string(u) + `}],"tools":[` + list + `]` + choice + `}`
		_, out := post(t, b.srv.URL+"/v1/messages", anthropicHeaders, body)
		var r struct {
			Content []struct{ Type, Name string } `json:"content"`
		}
		mustJSON(t, out, &r)
		for _, c := range r.Content {
			if c.Type == "tool_use" {
				names = append(names, c.Name)
			}
		}
	case "gemini":
		body := `{"contents":[{"role":"user","parts":[{"text":` + string(u) + `}]}],"tools":[{"functionDeclarations":[` + list + `]}]` + choice + `}`
		_, out := post(t, b.srv.URL+"/v1beta/models/gemini-2.5-flash:generateContent", geminiHeaders, body)
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						FunctionCall *struct{ Name string } `json:"functionCall"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		mustJSON(t, out, &r)
		for _, p := range r.Candidates[0].Content.Parts {
			if p.FunctionCall != nil {
				names = append(names, p.FunctionCall.Name)
			}
		}
	}
	return names
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// TestToolsWhenAsked_ChoosesLikeASaneModel: with Options.ToolsWhenAsked the
// model answers a greeting with text although tools are offered, calls the
// tool a turn names, prefers a read-only tool when any tool will do, never
// launches a sub-agent on a guess, and obeys a required tool choice — in
// every shape.
func TestToolsWhenAsked_ChoosesLikeASaneModel(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{ToolsWhenAsked: true})
	required := map[string]string{"chat": `,"tool_choice":"required"`, "responses": `,"tool_choice":"required"`,
		"anthropic": `,"tool_choice":{"type":"any"}`, "gemini": `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`}
	cases := []struct {
		name, user string
		required   bool
		want       string // the tool called, "" for a text answer
	}{
		{"a greeting gets text", "Hi there, how are you?", false, ""},
		{"client reminders are not the user's", "<system-reminder>Use the Agent tool and the Bash command tool</system-reminder>hello", false, ""},
		{"any tool: a read-only one", "Find the text files here with a tool.", false, "Read"},
		{"a named tool", "What is the weather in Paris?", false, "get_weather"},
		{"a named launcher", "Start an agent for this.", false, "Agent"},
		{"a shell command", "List the files with a shell command.", false, "Bash"},
		{"a directory listing", "List this directory.", false, "list_directory"},
		{"required: still not a launcher", "Hi", true, "Read"},
	}
	for _, shape := range []string{"chat", "responses", "anthropic", "gemini"} {
		for _, c := range cases {
			t.Run(shape+"/"+c.name, func(t *testing.T) {
				choice := ""
				if c.required {
					choice = required[shape]
				}
				got := toolTurn(t, b, shape, c.user, choice)
				want := []string{}
				if c.want != "" {
					want = []string{c.want}
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("called %v, want %v", got, want)
				}
			})
		}
	}
}

// TestToolsWhenAsked_Off: without the option a tool turn calls the first
// tool offered, whatever the user said (translator tests rely on it).
func TestToolsWhenAsked_Off(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	if got := toolTurn(t, b, "chat", "Hi there", ""); len(got) != 1 || got[0] != "Agent" {
		t.Fatalf("called %v, want [Agent]", got)
	}
}
