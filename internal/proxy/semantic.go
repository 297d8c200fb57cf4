package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// The semantic cache (package cache; docs/caching.md#semantic-cache) on the
// request path: when the exact cache misses, a domain of the policy's
// cache takes the request and its partition holds entries, its last user
// turn is embedded by the domain's embeddings model — an embeddings
// request of the caller's own, served by this handler (authentication,
// policy, limits, host keys, a usage event) — and the nearest earlier
// entry of its partition answers when it is similar enough. A miss keeps
// its answer with that vector too; a request whose partition was empty
// is embedded only then, once its answer has gone to the caller.

// cacheSimilarityHeader is a semantic hit's similarity (four places).
const cacheSimilarityHeader = "X-Relay-Cache-Similarity"

// embedTimeout bounds the embeddings request of a semantic lookup; a slow
// one is a miss. It is what a slow embeddings upstream can add to every
// request of a domain, so it is short: an embeddings call of one user turn
// takes tens of milliseconds.
const embedTimeout = time.Second

// semFill is a request's place in the semantic cache. Its vector is nil
// until the request is embedded: a request whose partition is empty, or
// that is not to be looked up, goes upstream at once and is embedded on
// the fill path, off the request.
type semFill struct {
	part   string
	vec    []float32
	domain *snapshot.SemanticDomain
	// emb is what embedding the request takes, while vec is nil.
	emb embedding
}

// embedding is an embeddings request made for a semantic lookup or fill:
// the caller's, by the catalog model name.
type embedding struct {
	model, text string
	key         string // the caller's presented credential
	remote      string
	id          string // the request's, sent as X-Request-ID
}

// semHit is what a semantic hit says on the usage event.
type semHit struct {
	domain     string
	entry      string
	similarity float64
}

// prepareSemantic finds the first domain of conf that takes request c for
// model m within scope s. When look is set and the domain's partition
// holds entries, it embeds the last user turn for the lookup; otherwise
// the embedding waits for the fill. It returns nil when no domain takes
// the request or the embedding failed (the request goes on as an exact
// miss).
func (rq *request) prepareSemantic(conf *snapshot.ResponseCache, s cache.Scope, m *snapshot.Model, c *canonical.Request, look bool) *semFill {
	if len(conf.Semantic) == 0 {
		return nil
	}
	var sys [32]byte
	hashed := false
	for i := range conf.Semantic {
		d := &conf.Semantic[i]
		if !d.Takes(m.ID, c.Metadata) {
			continue
		}
		if d.Systems != nil {
			if !hashed {
				sys, hashed = cache.SystemDigest(c.System), true
			}
			if !d.TakesSystem(sys) {
				continue
			}
		}
		em := rq.snap.Model(d.EmbeddingsModel)
		if em == nil {
			continue // a domain whose model left the catalog: the next may take it
		}
		part, text, ok, err := cache.Partition(s, d.Name, m.ID, em.ID, c)
		if err != nil || !ok {
			return nil
		}
		sf := &semFill{part: part, domain: d, emb: embedding{model: em.Name, text: text,
			key: wire.PresentedKey(rq.r.Header), remote: rq.r.RemoteAddr, id: rq.id}}
		if !look || !rq.h.cache.Semantic().Populated(rq.r.Context(), part) {
			return sf // nothing to find: embedded once the answer is kept
		}
		vec, err := embed(rq.r.Context(), rq.h, &sf.emb)
		if err != nil {
			rq.h.log.LogAttrs(rq.r.Context(), slog.LevelDebug, "semantic cache: no embedding",
				slog.String("request_id", rq.id), slog.String("domain", d.Name), slog.String("error", err.Error()))
			return nil
		}
		sf.vec, sf.emb = vec, embedding{}
		return sf
	}
	return nil
}

// embed asks h for e's embedding, as the caller: the embeddings request
// is authenticated, limited, routed and recorded like any (its
// X-Request-ID is the request's id). It is bounded by embedTimeout.
func embed(ctx context.Context, h *Handler, e *embedding) ([]float32, error) {
	body, err := json.Marshal(struct {
		Model string `json:"model"`
		Input string `json:"input"`
	}{e.model, e.text})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, embedTimeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+e.key)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Request-ID", e.id)
	r.RemoteAddr = e.remote
	w := &embedWriter{header: http.Header{}}
	if err := serveInner(h, w, r); err != nil {
		return nil, err
	}
	if w.status != http.StatusOK {
		return nil, fmt.Errorf("embeddings answered %d", w.status)
	}
	var out struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.body.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("embeddings answer: %w", err)
	}
	if len(out.Data) != 1 || len(out.Data[0].Embedding) == 0 {
		return nil, errors.New("embeddings answer holds no vector")
	}
	return out.Data[0].Embedding, nil
}

// serveInner serves r with h, turning the abort of a broken response into
// an error.
func serveInner(h *Handler, w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler { //nolint:errorlint // the sentinel is panicked as is
				panic(v)
			}
			err = errors.New("embeddings response broke")
		}
	}()
	h.ServeHTTP(w, r)
	return nil
}

// embedWriter keeps the answer of an embeddings request made for a
// semantic lookup.
type embedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *embedWriter) Header() http.Header { return w.header }

func (w *embedWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *embedWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len()+len(p) > 64<<20 {
		return 0, errors.New("embeddings answer too large")
	}
	return w.body.Write(p)
}

// lookupSemantic answers the request from the semantic cache when sf's
// partition holds an entry similar enough.
func (rq *request) lookupSemantic(sf *semFill) bool {
	sem := rq.h.cache.Semantic()
	if sf.vec == nil {
		return false // an empty partition: Populated counted the miss
	}
	hit, ok := sem.Lookup(rq.r.Context(), sf.part, sf.vec, sf.domain.Threshold)
	if !ok {
		return false
	}
	return rq.serveHit(hit.Entry, &semHit{domain: sf.domain.Name, entry: hit.ID, similarity: hit.Similarity})
}

// fillSemantic keeps e in the semantic cache as entry id (the request
// id), off the request path, embedding the request first when its lookup
// did not.
func fillSemantic(h *Handler, sf *semFill, id string, e *cache.Entry, ttl time.Duration, max int) {
	if sf.vec == nil {
		vec, err := embed(context.Background(), h, &sf.emb)
		if err != nil {
			h.log.LogAttrs(context.Background(), slog.LevelDebug, "semantic cache: no embedding to keep",
				slog.String("request_id", id), slog.String("domain", sf.domain.Name), slog.String("error", err.Error()))
			return
		}
		sf.vec = vec
	}
	h.cache.Semantic().Fill(context.Background(), sf.part, id, sf.vec, e, ttl, max)
}

// formatSimilarity is a similarity as the header and the usage event say it.
func formatSimilarity(b []byte, s float64) []byte {
	return strconv.AppendFloat(b, float64(int64(s*1e4+0.5))/1e4, 'f', -1, 64)
}
