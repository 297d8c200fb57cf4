package mockupstream

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
)

// serveRerank answers POST /v1/rerank in the shape Cohere, Jina, vLLM and
// TEI-style servers share: results by descending relevance_score, each
// with its index (and the document when return_documents is true), and
// usage as Jina and vLLM report it (total_tokens). A document scores the
// share of the query's words it holds.
func serveRerank(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	var req struct {
		Model           string            `json:"model"`
		Query           string            `json:"query"`
		Documents       []json.RawMessage `json:"documents"`
		TopN            *int              `json:"top_n"`
		ReturnDocuments bool              `json:"return_documents"`
	}
	if e := readJSON(r, x, &req); e != nil {
		return e
	}
	x.model = req.Model
	switch {
	case req.Model == "":
		return missing("model")
	case req.Query == "":
		return missing("query")
	case len(req.Documents) == 0:
		return missing("documents")
	}
	type result struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
		Document       any     `json:"document,omitempty"`
	}
	words := strings.Fields(strings.ToLower(req.Query))
	tokens := textTokens(req.Query)
	out := make([]result, 0, len(req.Documents))
	for i, raw := range req.Documents {
		var text string
		if json.Unmarshal(raw, &text) != nil {
			var d struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(raw, &d) != nil {
				return &apiError{kind: errInvalid, msg: "documents must be strings or objects with a text field", param: "documents"}
			}
			text = d.Text
		}
		tokens += textTokens(text)
		low, hits := strings.ToLower(text), 0
		for _, w := range words {
			if strings.Contains(low, w) {
				hits++
			}
		}
		res := result{Index: i, RelevanceScore: float64(hits) / float64(max(len(words), 1))}
		if req.ReturnDocuments {
			res.Document = map[string]string{"text": text}
		}
		out = append(out, res)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].RelevanceScore > out[b].RelevanceScore })
	if req.TopN != nil && *req.TopN >= 0 && *req.TopN < len(out) {
		out = out[:*req.TopN]
	}
	writeJSON(w, map[string]any{"id": randomID("rerank-", 24, alphaHex), "model": req.Model, "results": out, "usage": map[string]int64{"total_tokens": tokens}})
	return nil
}
