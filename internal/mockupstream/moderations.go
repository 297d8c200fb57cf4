package mockupstream

import (
	"encoding/json"
	"net/http"
	"strings"
)

// moderationCategories are OpenAI's, in its order.
var moderationCategories = []string{
	"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
	"self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic",
}

// serveModerations answers POST /v1/moderations: an input flags
// "violence" when it holds the word "kill", nothing otherwise.
func serveModerations(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if e := readJSON(r, x, &req); e != nil {
		return e
	}
	x.model = req.Model
	var one string
	var many []string
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	switch {
	case len(req.Input) == 0 || string(req.Input) == "null":
		return missing("input")
	case json.Unmarshal(req.Input, &one) == nil:
		many = []string{one}
	case json.Unmarshal(req.Input, &many) == nil:
	case json.Unmarshal(req.Input, &parts) == nil:
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		many = []string{b.String()}
	default:
		return &apiError{kind: errInvalid, msg: "'$.input' is invalid.", param: "input"}
	}
	results := make([]any, 0, len(many))
	for _, text := range many {
		violent := strings.Contains(strings.ToLower(text), "kill")
		cats, scores, applied := map[string]bool{}, map[string]float64{}, map[string][]string{}
		for _, c := range moderationCategories {
			cats[c], scores[c], applied[c] = false, 0.0001, []string{"text"}
		}
		if violent {
			cats["violence"], scores["violence"] = true, 0.97
		}
		results = append(results, map[string]any{"flagged": violent, "categories": cats, "category_scores": scores, "category_applied_input_types": applied})
	}
	writeJSON(w, map[string]any{"id": randomID("modr-", 29, alphaBase62), "model": cmpOr(req.Model, "omni-moderation-latest"), "results": results})
	return nil
}
