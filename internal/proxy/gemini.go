package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Gemini's own API, for callers of Google's SDKs: POST
// /v1beta/models/{model}:{method} for generateContent,
// streamGenerateContent (?alt=sse), countTokens, embedContent and
// batchEmbedContents, and GET /v1beta/models[/{model}] — also under
// /gemini/…, and the same methods under /v1/models/. The model in the path
// is a catalog model name (model@host pins a host), with or without
// Gemini's "models/" prefix; the relay key comes as Bearer, x-api-key,
// X-Relay-Key, x-goog-api-key or ?key=. Gemini bindings get the body
// verbatim with the upstream model spliced into the URL path; other
// bindings are served through package translator.

// geminiKey makes a relay key sent Gemini's way (x-goog-api-key, ?key=)
// the one authentication reads, when no other credential header came.
func geminiKey(r *http.Request) {
	if wire.PresentedKey(r.Header) != "" {
		return
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key != "" {
		r.Header.Set("X-Relay-Key", key)
	}
}

// geminiUpstream is the body and URL of an attempt through a gemini
// binding: the caller's body, and its path with the binding's upstream
// model in it. The query goes along but for the relay key.
func (rq *request) geminiUpstream(c *routing.Candidate) ([]byte, string) {
	model := strings.TrimPrefix(c.Binding.UpstreamModel, "models/")
	u := wire.JoinURL(c.Host.BaseURL, "/v1beta/models/"+url.PathEscape(model)+":"+rq.in.GeminiMethod(rq.stream))
	if q := rq.r.URL.Query(); len(q) > 0 {
		q.Del("key")
		if enc := q.Encode(); enc != "" {
			u += "?" + enc
		}
	}
	return rq.geminiEmbedBody(c.Binding), u
}

// geminiEmbedBody is the body for a gemini binding. Embedding requests
// name their model inside the body too ("models/{model}", which Gemini
// checks against the path): those names are replaced by the binding's
// upstream model, so the model Gemini acts on is the one Relay routed to.
// Every other body goes verbatim.
func (rq *request) geminiEmbedBody(b *snapshot.Binding) []byte {
	body := rq.withoutHint(rq.body.Bytes())
	if rq.in != wire.InboundGeminiEmbed && rq.in != wire.InboundGeminiBatchEmbed {
		return body
	}
	want := "models/" + strings.TrimPrefix(b.UpstreamModel, "models/")
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body // the upstream says what is wrong with it
	}
	setModel := func(o map[string]json.RawMessage) bool {
		raw, ok := o["model"]
		if !ok {
			return false
		}
		var have string
		if json.Unmarshal(raw, &have) == nil && have == want {
			return false
		}
		o["model"], _ = json.Marshal(want)
		return true
	}
	changed := false
	if rq.in == wire.InboundGeminiEmbed {
		changed = setModel(m)
	} else {
		var reqs []map[string]json.RawMessage
		if json.Unmarshal(m["requests"], &reqs) != nil {
			return body
		}
		for _, r := range reqs {
			if setModel(r) {
				changed = true
			}
		}
		if changed {
			m["requests"], _ = json.Marshal(reqs)
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	if rq.sending.Load() > 0 {
		rq.upBody = nil // an earlier attempt's body may still be on the wire
	}
	rq.upBody = append(rq.upBody[:0], bytes.TrimSpace(out)...)
	return rq.upBody
}
