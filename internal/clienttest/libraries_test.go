package clienttest

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

// statefulResponsesLanded is the one switch for the cases marked
// needsStatefulResponses: until Relay keeps Responses state on every binding
// shape (issue 24.1), they are expected to fail, and a test fails if one
// passes. Flip it when that lands; then they must pass like the rest.
const statefulResponsesLanded = true

// library is a client library whose script (testdata/node) runs every
// provider it has against every binding shape, plain and streamed, in one
// node process.
type library struct {
	script, client, pkg string
	providers           []string
}

var libraries = []library{
	{"aisdk.mjs", "ai-sdk", "ai", []string{"openai", "openai-chat", "anthropic", "google", "openai-compatible"}},
	{"langchain.mjs", "langchain-js", "@langchain/core", []string{"openai", "anthropic", "google-genai"}},
}

// needsStatefulResponses names the cases that send Responses input items
// that point at stored items (item_reference): the AI SDK's default OpenAI
// provider leaves store unset (true) and pushes its answer back as
// references, which only the binding's own provider, or Relay's response
// store, can resolve. openai_responses bindings pass them through.
func needsStatefulResponses(client, provider string, shape wire.Shape) bool {
	return client == "ai-sdk" && provider == "openai" && shape != wire.ShapeOpenAIResponses
}

// TestLibraries runs each library's script once, against a model of every
// binding shape: each case a 3-turn conversation with a tool round trip
// (see the scripts), and one subtest per case.
func TestLibraries(t *testing.T) {
	modules := install(t)
	for _, lib := range libraries {
		t.Run(lib.client, func(t *testing.T) {
			parallel(t)
			r := startRelay(t)
			models := map[string]string{}
			for _, b := range shapes {
				models[string(b.shape)] = modelName(b.shape)
			}
			m, _ := json.Marshal(models)
			env := append(baseEnv(t.TempDir()), "RELAY_URL="+r.URL, "RELAY_KEY="+relayKey, "RELAY_MODELS="+string(m))
			out, err := runClient(t, workDir(t, modules), env, 4*time.Minute, "node", lib.script)
			results := caseLines(out)
			recordLibrary(t, r, lib.client, pinned(t, lib.pkg))
			if err != nil {
				t.Fatalf("node %s: %v\n%s", lib.script, err, out)
			}
			for _, p := range lib.providers {
				for _, b := range shapes {
					for _, mode := range []string{"plain", "stream"} {
						name := p + "/" + string(b.shape) + "/" + mode
						t.Run(name, func(t *testing.T) {
							got, ran := results[name]
							switch {
							case !ran:
								t.Fatalf("the script did not run this case:\n%s", out)
							case needsStatefulResponses(lib.client, p, b.shape) && !statefulResponsesLanded:
								if got == "ok" {
									t.Fatal("passes although it needs stateful Responses: set statefulResponsesLanded")
								}
								t.Logf("expected to fail until stateful Responses land: %s", got)
							case got != "ok":
								t.Fatal(got)
							}
						})
					}
				}
			}
		})
	}
}

// caseLines reads the "ok <case>" and "FAIL <case>: <why>" lines of a
// script's output: case → "ok" or the failure.
func caseLines(out string) map[string]string {
	res := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "ok "); ok {
			res[strings.TrimSpace(name)] = "ok"
		} else if rest, ok := strings.CutPrefix(line, "FAIL "); ok {
			name, why, _ := strings.Cut(rest, ": ")
			res[name] = "FAIL " + why
		}
	}
	return res
}

// recordLibrary logs a library's requests and, when RELAY_CLIENTTEST_RECORD
// is set, adds them to its fixtures, each with the model it named. Requests
// that point at stored Responses items are left out: they depend on what
// an earlier request stored, which a replay does not redo.
func recordLibrary(t *testing.T, r *relay, client, version string) {
	t.Helper()
	xs := r.rec.exchanges()
	for _, x := range xs {
		if x.Status >= 300 {
			t.Logf("%s %s → %d %s", x.Method, x.Path, x.Status, x.Error)
		}
	}
	if os.Getenv("RELAY_CLIENTTEST_RECORD") == "" {
		return
	}
	// Longest model name first: ct-openai is a prefix of ct-openai_responses.
	byLength := slices.Clone(shapes)
	slices.SortStableFunc(byLength, func(a, b struct {
		shape    wire.Shape
		upstream string
	}) int {
		return len(b.shape) - len(a.shape)
	})
	byModel := map[string][]exchange{}
	for _, x := range xs {
		if strings.Contains(string(x.Body), `"item_reference"`) {
			continue
		}
		for _, b := range byLength {
			if m := modelName(b.shape); strings.Contains(x.Path, m) || strings.Contains(string(x.Body), `"`+m+`"`) {
				x.Client, x.Model = client+" "+version, m
				byModel[string(b.shape)] = append(byModel[string(b.shape)], x)
				break
			}
		}
	}
	for _, b := range shapes {
		if err := fixtures.add(client, string(b.shape), byModel[string(b.shape)]); err != nil {
			t.Fatal(err)
		}
	}
}
