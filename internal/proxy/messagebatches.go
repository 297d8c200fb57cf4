package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Anthropic's Message Batches, /v1/messages/batches[/{id}[/results|
// /cancel]], on the host key that made them, indexed and owned as files
// and batches are (files.go): another project's id is the 404 a missing
// one gets, a list is the caller's part of the index.
//
// Where a batch goes: every request of one batch names the same catalog
// model (Relay refuses a mix with a 400 naming the request), and the batch
// goes to that model's first Anthropic binding with a host key the policy
// grants; each request's model is rewritten to the binding's upstream
// model, and the body sent is rebuilt from what Relay read (custom_id and
// params only), so the upstream acts on what Relay decided on.
//
// The budget check is at creation, as for OpenAI batches: prompt bytes / 4
// and each request's max_tokens (required by Anthropic), at the batch
// price. Metering is once, when Relay first sees the batch ended (a
// retrieve, a cancel, a list, the results themselves, or the sweep's own
// retrieve of a batch on the pending list, sweep.go): Anthropic's batch
// object carries no usage, so Relay reads the results (streaming, a line at
// a time) and sums each succeeded message's usage — input, cache reads and
// writes, output — into one ledger event at the batch price whose request
// id is the batch's id; the index's Claim makes exactly one pod record it.
//
// results_url in every answer is Relay's own URL for the results, not the
// provider's: the caller's key means nothing there.

// messageBatchPrefix is the collection's path.
const messageBatchPrefix = "/v1/messages/batches"

// attrMetered marks a message batch whose usage is in the ledger.
const attrMetered = "metered"

// maxResultLine bounds one line of a batch's results that Relay meters;
// a longer line passes to the caller but is not counted.
const maxResultLine = 16 << 20

// answerMessageBatch sends on the upstream's answer on a message batch or
// its results, metering it once it has ended.
func (rq *request) answerMessageBatch(ctx context.Context, o objects.Object, id, sub string, resp *http.Response) {
	if sub == "results" && resp.StatusCode < 300 {
		rq.streamResults(ctx, o, resp)
		return
	}
	body := rq.objectAnswer(resp, o)
	switch {
	case resp.StatusCode >= 300:
		if rq.r.Method == http.MethodDelete && resp.StatusCode == http.StatusNotFound {
			_ = rq.h.objects.Delete(ctx, rq.caller.ProjectID, objects.KindMessageBatch, id)
		}
	case rq.r.Method == http.MethodDelete:
		_ = rq.h.objects.Delete(ctx, rq.caller.ProjectID, objects.KindMessageBatch, id)
	default:
		rq.observeMessageBatch(ctx, o, body)
		body = rq.relayResultsURL(body)
	}
	rq.respond(resp.StatusCode, "application/json", body)
}

// messageBatchBody is what Relay reads of a create.
type messageBatchBody struct {
	Requests []struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	} `json:"requests"`
}

// messageBatchPlan is a create's routing, estimate and rebuilt body.
type messageBatchPlan struct {
	home          objectHome
	model         *snapshot.Model
	body          []byte
	estIn, estOut int64
}

// planMessageBatch reads a create's body: one model, granted, with an
// Anthropic binding the policy can reach.
func (rq *request) planMessageBatch(body []byte) (*messageBatchPlan, error) {
	var req messageBatchBody
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request body is not a JSON object with requests, each a custom_id and params."}
	}
	if len(req.Requests) == 0 {
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "requests", Msg: "requests: give at least one request."}
	}
	pl := &messageBatchPlan{body: make([]byte, 0, len(body)+len(body)/8)}
	pl.body = append(pl.body, `{"requests":[`...)
	for i, r := range req.Requests {
		at := "requests." + strconv.Itoa(i)
		bad := func(msg string) error {
			return &wire.Error{Kind: wire.ErrMalformedRequest, Param: at, Msg: at + ": " + msg}
		}
		if r.CustomID == "" {
			return nil, bad("custom_id is missing.")
		}
		scan, err := wire.ScanRequest(r.Params)
		if err != nil {
			return nil, bad("params: " + err.Error() + ".")
		}
		if pl.model == nil {
			if pl.model, err = rq.batchModel(scan.Model); err != nil {
				return nil, err
			}
			home, ok := rq.homeOf(pl.model, func(s wire.Shape) bool { return s == wire.ShapeAnthropic })
			if !ok {
				return nil, wire.Errorf(wire.ErrNoUsableHostKey, "No host key the policy grants can run message batches of the model %q right now: message batches go to its Anthropic bindings.", pl.model.Name)
			}
			pl.home = home
		} else if scan.Model != pl.model.Name {
			return nil, bad("every request of a message batch must name the same model (" + strconv.Quote(pl.model.Name) + ").")
		}
		pl.estIn += int64(len(r.Params)+3) / 4
		out := scan.MaxTokens
		if out <= 0 {
			out = int64(pl.model.MaxOutputTokens)
		}
		if out <= 0 {
			out = defaultBatchOutput
		}
		pl.estOut += out
		if i > 0 {
			pl.body = append(pl.body, ',')
		}
		pl.body = append(pl.body, `{"custom_id":`...)
		pl.body = wire.AppendString(pl.body, r.CustomID)
		pl.body = append(pl.body, `,"params":`...)
		pl.body = wire.AppendRewritten(pl.body, r.Params, &scan, wire.Rewrite{Model: pl.home.binding.UpstreamModel})
		pl.body = append(pl.body, '}')
	}
	pl.body = append(pl.body, "]}"...)
	return pl, nil
}

// createMessageBatch answers POST /v1/messages/batches.
func (rq *request) createMessageBatch(ctx context.Context) {
	if !rq.readBody() {
		return
	}
	pl, err := rq.planMessageBatch(rq.body.Bytes())
	if err != nil {
		rq.fail(err)
		return
	}
	b, m := pl.home.binding, pl.model
	if !rq.admitBatch(ctx, m, b, pl.estIn, pl.estOut) {
		return
	}
	o := objects.Object{ID: "(create)", Kind: objects.KindMessageBatch, ProjectID: rq.caller.ProjectID, HostID: pl.home.host.ID, HostKeyID: pl.home.key.ID}
	resp, ok := rq.objectCall(ctx, o, http.MethodPost, messageBatchPrefix, pl.body, "application/json")
	if !ok {
		return
	}
	defer resp.Body.Close()
	answer := rq.objectAnswer(resp, o)
	if resp.StatusCode < 300 {
		var got struct {
			ID        string    `json:"id"`
			CreatedAt time.Time `json:"created_at"`
		}
		if json.Unmarshal(answer, &got) != nil || got.ID == "" {
			rq.fail(wire.Errorf(wire.ErrUpstream, "The host answered the message batch without an id."))
			return
		}
		o.ID, o.CreatedAt, o.Attrs = got.ID, got.CreatedAt, rq.creatorAttrs(b)
		if o.CreatedAt.IsZero() {
			o.CreatedAt = rq.at
		}
		if len(answer) <= maxObjectJSON {
			o.Attrs[attrObject] = string(answer)
		}
		o.State = objects.Seen(o.Kind, answer, rq.at)
		if err := rq.h.objects.Put(ctx, o); err != nil {
			rq.indexFailed(err)
			return
		}
		rq.watchBatch(ctx, o)
		answer = rq.relayResultsURL(answer)
	}
	rq.respond(resp.StatusCode, "application/json", answer)
}

// admitBatch checks a batch's estimate against the caller's budgets;
// false once it has answered (the refusal names the estimate).
func (rq *request) admitBatch(ctx context.Context, m *snapshot.Model, b *snapshot.Binding, estIn, estOut int64) bool {
	done, err := rq.h.limiter.Admit(ctx, rq.batchAdmission(m, b, &admission.BatchTokens{Input: estIn, Output: estOut}))
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) && errors.Is(we.Kind, wire.ErrBudgetExceeded) {
			est := pricing.BatchEstimateMicros(&b.Pricing, estIn, estOut)
			refusal := *we
			refusal.Msg = "The batch is refused: its estimate, " + strconv.FormatInt(estIn, 10) + " prompt and " + strconv.FormatInt(estOut, 10) +
				" output tokens at the batch price (" + formatMicros(est) + "), exceeds what the budget has left. " + we.Msg
			err = &refusal
		}
		rq.batchRefused(err)
		return false
	}
	if done != nil {
		done(wire.Usage{}) // not held while the batch runs
	}
	return true
}

// observeMessageBatch keeps what the upstream just showed of a message
// batch, and meters it once it has ended. It reports whether the batch
// is done with: ended and metered.
func (rq *request) observeMessageBatch(ctx context.Context, o objects.Object, body []byte) bool {
	var s struct {
		ID               string `json:"id"`
		ProcessingStatus string `json:"processing_status"`
	}
	if json.Unmarshal(body, &s) != nil || s.ID != o.ID {
		return false
	}
	st := objects.Seen(o.Kind, body, rq.at)
	fits := len(body) <= maxObjectJSON && o.Attrs[attrObject] != string(body)
	if fits || (st != nil && !st.Same(o.State)) {
		if fits {
			o.Attrs[attrObject] = string(body)
		}
		if st != nil {
			o.State = st
		}
		_ = rq.h.objects.Put(ctx, o)
	}
	if s.ProcessingStatus != "ended" {
		return false
	}
	if o.Attrs[attrMetered] != "" {
		return true
	}
	resp, ok := rq.quietObjectCall(ctx, o, messageBatchPrefix+"/"+url.PathEscape(o.ID)+"/results")
	if !ok {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return false
	}
	var mt resultsMeter
	if _, err := io.Copy(&mt, resp.Body); err != nil {
		return false // metered by a later look
	}
	return rq.meterMessageBatch(ctx, o, &mt)
}

// meterMessageBatch records a whole results read, once; true once the
// batch is metered (by this pod or another).
func (rq *request) meterMessageBatch(ctx context.Context, o objects.Object, mt *resultsMeter) bool {
	mt.flush()
	first, err := rq.h.objects.Claim(ctx, o.ProjectID, objects.KindMessageBatch, o.ID, "usage")
	if err != nil {
		return false
	}
	if first {
		rq.recordBatch(ctx, o, "message_batch", mt.usage)
		o.Attrs[attrMetered] = "1"
		_ = rq.h.objects.Put(ctx, o)
	}
	return rq.metered(ctx, o)
}

// streamResults copies a batch's results to the caller as they arrive,
// metering them on the way if the batch is not metered yet.
func (rq *request) streamResults(ctx context.Context, o objects.Object, resp *http.Response) {
	if o.Attrs[attrMetered] != "" {
		rq.streamObject(resp)
		return
	}
	var mt resultsMeter
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &mt), resp.Body}
	rq.streamObject(resp)
	if !rq.abort && !mt.partial {
		rq.meterMessageBatch(ctx, o, &mt)
	}
}

// resultsMeter sums the usage of a results stream's succeeded messages,
// a line at a time.
type resultsMeter struct {
	line    []byte
	long    bool // the current line passed maxResultLine
	partial bool // some line was not counted
	usage   wire.Usage
}

// Write implements io.Writer.
func (m *resultsMeter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.add(p)
			break
		}
		m.add(p[:i])
		m.end()
		p = p[i+1:]
	}
	return n, nil
}

func (m *resultsMeter) add(p []byte) {
	if m.long || len(m.line)+len(p) > maxResultLine {
		m.long, m.line = true, m.line[:0]
		return
	}
	m.line = append(m.line, p...)
}

func (m *resultsMeter) end() {
	line := bytes.TrimSpace(m.line)
	switch {
	case m.long:
		m.partial = true
	case len(line) == 0:
	default:
		if t, _ := wire.Get(line, "result", "type"); string(t) == `"succeeded"` {
			if u, ok := wire.Get(line, "result", "message", "usage"); ok {
				got := wire.ParseUsage(wire.ShapeAnthropic, u)
				m.usage.Input += got.Input
				m.usage.Output += got.Output
				m.usage.CacheRead += got.CacheRead
				m.usage.CacheWrite += got.CacheWrite
				m.usage.Reasoning += got.Reasoning
			}
		}
	}
	m.line, m.long = m.line[:0], false
}

// flush counts a last line without a newline.
func (m *resultsMeter) flush() {
	if len(m.line) > 0 || m.long {
		m.end()
	}
}

// listMessageBatches answers one page of the caller's message batches,
// newest first, in Anthropic's shape: limit (1–1000, 20 by default) and
// after_id or before_id. Running batches are retrieved first, so each shows as it is
// (and an ended one is metered).
func (rq *request) listMessageBatches(ctx context.Context) {
	q := rq.r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "limit", Msg: "limit must be an integer from 1 to 1000."})
			return
		}
		limit = n
	}
	page := objects.Page{After: q.Get("after_id"), Limit: limit}
	before := q.Get("before_id")
	if before != "" {
		if page.After != "" {
			rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "before_id", Msg: "Give after_id or before_id, not both."})
			return
		}
		// The page just newer than before_id: the oldest-first list from
		// it, shown newest first.
		page = objects.Page{After: before, Limit: limit, Asc: true}
	}
	got, more, err := rq.h.objects.List(ctx, rq.caller.ProjectID, objects.KindMessageBatch, page)
	if err != nil {
		rq.indexFailed(err)
		return
	}
	if page.Asc {
		slices.Reverse(got)
	}
	for i := range got {
		o := &got[i]
		if st, _ := wire.Get([]byte(o.Attrs[attrObject]), "processing_status"); string(st) == `"ended"` && o.Attrs[attrMetered] != "" {
			continue
		}
		resp, ok := rq.quietObjectCall(ctx, *o, messageBatchPrefix+"/"+url.PathEscape(o.ID))
		if !ok {
			continue
		}
		body := rq.objectAnswer(resp, *o)
		resp.Body.Close()
		if resp.StatusCode < 300 {
			rq.observeMessageBatch(ctx, *o, body)
			if len(body) <= maxObjectJSON {
				o.Attrs[attrObject] = string(body)
			}
		}
	}
	b := append(rq.out[:0], `{"data":[`...)
	n := 0
	for _, o := range got {
		s := o.Attrs[attrObject]
		if s == "" || !json.Valid([]byte(s)) {
			continue // never seen whole: nothing true to show
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, rq.relayResultsURL([]byte(s))...)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, more)
	b = append(b, `,"first_id":`...)
	if len(got) > 0 {
		b = wire.AppendString(b, got[0].ID)
		b = append(b, `,"last_id":`...)
		b = wire.AppendString(b, got[len(got)-1].ID)
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	rq.out = append(b, '}')
	rq.respond(http.StatusOK, "application/json", rq.out)
}

// relayResultsURL points a message batch's results_url at Relay: the
// caller's own base (scheme, host and any /anthropic prefix) and the
// batch's results route.
func (rq *request) relayResultsURL(obj []byte) []byte {
	v, ok := wire.Get(obj, "results_url")
	if !ok || len(v) == 0 || v[0] != '"' {
		return obj
	}
	id, ok := wire.Get(obj, "id")
	var bid string
	if !ok || json.Unmarshal(id, &bid) != nil || bid == "" {
		return obj
	}
	scheme := "http"
	if rq.r.TLS != nil || strings.EqualFold(rq.r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	prefix, _, _ := strings.Cut(rq.r.URL.Path, messageBatchPrefix)
	u := scheme + "://" + rq.r.Host + prefix + messageBatchPrefix + "/" + url.PathEscape(bid) + "/results"
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return obj
	}
	m["results_url"] = wire.AppendString(nil, u)
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}
