package mockupstream

import (
	"context"
	"net/http"
)

// faceQuirks are how a cloud face's chat answers differ from the inner
// Server's OpenAI ones. The face puts them on the context of the request
// it forwards (withQuirks); the inner chat handler reads them.
type faceQuirks struct {
	// reasoning names the chat message and delta member that carries a
	// reasoning model's thoughts ("reasoning_content": vLLM, DeepSeek,
	// llama.cpp, Fireworks; "reasoning": Ollama, Groq, Together,
	// OpenRouter); "" sends none, as OpenAI.
	reasoning string
	// azureFilters adds Azure's prompt_filter_results and each choice's
	// content_filter_results; on a stream the prompt's results come first,
	// in a chunk with no choices, id or model, as Azure sends them.
	azureFilters bool
	// completionFiltered cuts the completion as Azure's output filter
	// does: finish_reason content_filter, a stream stopped halfway, a whole
	// answer without content.
	completionFiltered bool
}

type quirksKey struct{}

func withQuirks(r *http.Request, q faceQuirks) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), quirksKey{}, q))
}

func quirksOf(ctx context.Context) faceQuirks {
	q, _ := ctx.Value(quirksKey{}).(faceQuirks)
	return q
}

// azureFilterCategories are the categories Azure's content filter rates.
var azureFilterCategories = []string{"hate", "self_harm", "sexual", "violence"}

// azureFilterResults is a content_filter_results object: every category
// safe, or violence filtered at medium severity.
func azureFilterResults(filtered bool) map[string]any {
	out := make(map[string]any, len(azureFilterCategories))
	for _, cat := range azureFilterCategories {
		out[cat] = map[string]any{"filtered": false, "severity": "safe"}
	}
	if filtered {
		out["violence"] = map[string]any{"filtered": true, "severity": "medium"}
	}
	return out
}

// azurePromptFilterResults is the prompt_filter_results of an answer.
func azurePromptFilterResults() []map[string]any {
	return []map[string]any{{"prompt_index": 0, "content_filter_results": azureFilterResults(false)}}
}
