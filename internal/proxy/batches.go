package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI batches, /v1/batches[/{id}[/cancel]], on the host key of their
// input file (files.go).
//
// Metering, exactly and once: a batch's usage is recorded when Relay first
// sees it finished (a retrieve, a cancel or a list that shows a terminal
// status, or the sweep's own retrieve of a batch on the pending list,
// sweep.go), from the usage the batch object reports — the provider's own
// totals of input, cached, output and reasoning tokens, as it bills them
// — priced at the batch price (pricing.BatchDivisor) in one ledger event
// whose request id is the batch's id. The index's Claim makes exactly one
// pod record it, however many look. The same usage is charged to the
// project's budgets then.
//
// The budget check is at creation: the input file's lines were estimated
// when it was uploaded (prompt bytes / 4, and each line's max_tokens, else
// the model's max output, else defaultBatchOutput), and a batch whose
// estimate, at the batch price, the caller's budgets cannot cover is
// refused with the estimate named. The estimate is not held while the
// batch runs: two batches created at once may each pass, and the ledger
// holds what they spent either way.

// batchEndpoints are the endpoints a batch's lines may call.
var batchEndpoints = map[string]bool{"/v1/chat/completions": true, "/v1/embeddings": true, "/v1/responses": true, "/v1/completions": true}

// defaultBatchOutput is a batch line's output estimate when it sets no
// limit and its model declares none.
const defaultBatchOutput = 4096

// batchInput is what a batch input file's lines come to.
type batchInput struct {
	content       []byte // the lines, each model rewritten to the upstream's
	home          objectHome
	endpoint      string
	lines         int
	estIn, estOut int64
	model         *snapshot.Model
	upstreamModel string
}

// planBatchInput reads a batch input file: every line a request to one
// endpoint for one model the policy grants.
func (rq *request) planBatchInput(content []byte) (*batchInput, error) {
	in := &batchInput{content: make([]byte, 0, len(content)+len(content)/8)}
	bad := func(line int, msg string) error {
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: "file", Msg: "Line " + strconv.Itoa(line) + " of the batch input file: " + msg}
	}
	n := 0
	for rest := content; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		n++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var l struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, bad(n, "not a JSON object with custom_id, method, url and body.")
		}
		switch {
		case l.CustomID == "":
			return nil, bad(n, "custom_id is missing.")
		case l.Method != http.MethodPost:
			return nil, bad(n, "method must be POST.")
		case !batchEndpoints[l.URL]:
			return nil, bad(n, "url must be one of /v1/chat/completions, /v1/embeddings, /v1/responses, /v1/completions.")
		case in.endpoint != "" && l.URL != in.endpoint:
			return nil, bad(n, "every line of a batch must call the same url.")
		}
		scan, err := wire.ScanRequest(l.Body)
		if err != nil {
			return nil, bad(n, "body: "+err.Error()+".")
		}
		if in.model == nil {
			if in.model, err = rq.batchModel(scan.Model); err != nil {
				return nil, err
			}
			home, ok := rq.homeFor(in.model)
			if !ok {
				return nil, wire.Errorf(wire.ErrNoUsableHostKey, "No host key the policy grants can run batches of the model %q right now: batches go to its OpenAI bindings.", in.model.Name)
			}
			in.home, in.upstreamModel, in.endpoint = home, home.binding.UpstreamModel, l.URL
		} else if scan.Model != in.model.Name {
			return nil, bad(n, "every line of a batch must name the same model ("+strconv.Quote(in.model.Name)+").")
		}
		in.lines++
		in.estIn += int64(len(l.Body)+3) / 4
		if l.URL != "/v1/embeddings" {
			out := scan.MaxTokens
			if out <= 0 {
				out = int64(in.model.MaxOutputTokens)
			}
			if out <= 0 {
				out = defaultBatchOutput
			}
			in.estOut += out
		}
		// The line again, with only the members the upstream runs: what
		// Relay read is what it acts on.
		c := in.content
		c = append(c, `{"custom_id":`...)
		c = wire.AppendString(c, l.CustomID)
		c = append(c, `,"method":"POST","url":`...)
		c = wire.AppendString(c, l.URL)
		c = append(c, `,"body":`...)
		c = wire.AppendRewritten(c, l.Body, &scan, wire.Rewrite{Model: in.upstreamModel})
		in.content = append(c, "}\n"...)
	}
	if in.lines == 0 {
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "file", Msg: "The batch input file has no lines."}
	}
	return in, nil
}

// batchModel resolves a batch line's model for the caller.
func (rq *request) batchModel(name string) (*snapshot.Model, error) {
	m := rq.snap.ModelByName(name)
	if m == nil {
		return nil, wire.Errorf(wire.ErrModelNotFound, "The model %q does not exist.", name)
	}
	if p := rq.caller.Policy; p == nil || !p.GrantsModel(m.ID) {
		return nil, wire.Errorf(wire.ErrForbidden, "The policy does not grant the model %q.", name)
	}
	return m, nil
}

// answerBatch sends on the upstream's answer on a batch, noting its state.
func (rq *request) answerBatch(ctx context.Context, o objects.Object, _, _ string, resp *http.Response) {
	body := rq.objectAnswer(resp, o)
	if resp.StatusCode < 300 {
		rq.observeBatch(ctx, o, body)
	}
	rq.respond(resp.StatusCode, "application/json", body)
}

// createBatch answers POST /v1/batches.
func (rq *request) createBatch(ctx context.Context) {
	if !rq.readBody() {
		return
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(rq.body.Bytes(), &req); err != nil || req == nil {
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request body is not a JSON object."})
		return
	}
	var fileID, endpoint string
	if json.Unmarshal(req["input_file_id"], &fileID) != nil || fileID == "" {
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "input_file_id", Msg: "Missing required parameter: 'input_file_id'."})
		return
	}
	_ = json.Unmarshal(req["endpoint"], &endpoint)
	f, err := rq.h.objects.Get(ctx, rq.caller.ProjectID, objects.KindFile, fileID)
	switch {
	case errors.Is(err, objects.ErrNotFound):
		rq.fail(noSuchObject(objects.KindFile, fileID, "input_file_id"))
		return
	case err != nil:
		rq.indexFailed(err)
		return
	case f.Attrs[attrBinding] == "":
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "input_file_id", Msg: "The input file must be uploaded with purpose 'batch'."})
		return
	case endpoint != f.Attrs[attrEndpoint]:
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "endpoint", Msg: "The batch's endpoint must be the url its input file's lines call (" + f.Attrs[attrEndpoint] + ")."})
		return
	}
	b := rq.snap.Binding(parseID(f.Attrs[attrBinding]))
	if b == nil {
		rq.fail(&wire.Error{Kind: wire.ErrNotFound, Param: "input_file_id", Msg: "The binding the input file was made for is no longer in the catalog."})
		return
	}
	m := rq.snap.Model(b.ModelID)
	if p := rq.caller.Policy; m == nil || p == nil || !p.GrantsModel(m.ID) || !p.GrantsHostKey(f.HostKeyID) {
		rq.fail(wire.Errorf(wire.ErrForbidden, "The policy no longer grants the model or the host key the input file was made for."))
		return
	}
	estIn, _ := strconv.ParseInt(f.Attrs[attrEstIn], 10, 64)
	estOut, _ := strconv.ParseInt(f.Attrs[attrEstOut], 10, 64)
	if !rq.admitBatch(ctx, m, b, estIn, estOut) {
		return
	}
	body, _ := json.Marshal(req) // each member once: what Relay read
	resp, ok := rq.objectCall(ctx, f, http.MethodPost, "/v1/batches", body, "application/json")
	if !ok {
		return
	}
	defer resp.Body.Close()
	answer := rq.objectAnswer(resp, f)
	if resp.StatusCode < 300 {
		var got struct {
			ID        string `json:"id"`
			CreatedAt int64  `json:"created_at"`
		}
		if json.Unmarshal(answer, &got) != nil || got.ID == "" {
			rq.fail(wire.Errorf(wire.ErrUpstream, "The host answered the batch without an id."))
			return
		}
		o := objects.Object{ID: got.ID, Kind: objects.KindBatch, ProjectID: rq.caller.ProjectID, HostID: f.HostID, HostKeyID: f.HostKeyID,
			CreatedAt: time.Unix(got.CreatedAt, 0), Attrs: rq.creatorAttrs(b)}
		if got.CreatedAt == 0 {
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
	}
	rq.respond(resp.StatusCode, "application/json", answer)
}

// watchBatch puts a batch just made on the index's pending list, for the
// sweep (sweep.go) to meter should nobody look at it again.
func (rq *request) watchBatch(ctx context.Context, o objects.Object) {
	if err := rq.h.objects.Watch(ctx, objects.Pending{ProjectID: o.ProjectID, Kind: o.Kind, ID: o.ID}, rq.at); err != nil {
		rq.h.log.Warn("batch not on the pending list: metered when next seen", "batch_id", o.ID, "error", err)
	}
}

// metered takes a batch whose usage is in the ledger (or that has none to
// record) off the pending list; true, for the sweep.
func (rq *request) metered(ctx context.Context, o objects.Object) bool {
	_ = rq.h.objects.Unwatch(ctx, objects.Pending{ProjectID: o.ProjectID, Kind: o.Kind, ID: o.ID}) // a later sweep unwatches it again
	return true
}

// batchRefused answers the limiter's refusal of a batch as limiterFailed
// does, but never on a fallback model: a batch runs the model its file
// was made for.
func (rq *request) batchRefused(err error) {
	var we *wire.Error
	if !errors.As(err, &we) {
		rq.h.log.Error("limiter failed", "request_id", rq.id, "error", err)
		err = wire.Errorf(wire.ErrUnavailable, "The rate limiter is unavailable; try again shortly.")
	}
	var hs interface{ SetHeaders(http.Header) }
	if errors.As(err, &hs) {
		hs.SetHeaders(rq.w.Header())
	}
	rq.fail(err)
}

// Attributes of the caller that made a batch, for its ledger event.
const (
	attrTeam           = "team_id"
	attrCredential     = "credential_id"
	attrCredentialKind = "credential_kind"
	attrServiceAccount = "service_account_id"
	attrUser           = "user_id"
	attrPolicy         = "policy_id"
)

func (rq *request) creatorAttrs(b *snapshot.Binding) map[string]string {
	c := &rq.caller
	a := map[string]string{
		attrModel: b.ModelID.String(), attrBinding: b.ID.String(),
		attrTeam: c.TeamID.String(), attrCredential: c.CredentialID.String(), attrCredentialKind: strconv.Itoa(int(c.Kind)),
		attrServiceAccount: c.ServiceAccountID.String(), attrUser: c.UserID.String(),
	}
	if c.Policy != nil {
		a[attrPolicy] = c.Policy.ID.String()
	}
	return a
}

func parseID(s string) snapshot.ID {
	id, _ := uuid.Parse(s)
	return id
}

// formatMicros writes micro-units of currency as dollars.
func formatMicros(m int64) string {
	return "$" + strconv.FormatFloat(float64(m)/1e6, 'f', 6, 64)
}

// batchAdmission is a batch's admission by the limiter.
func (rq *request) batchAdmission(m *snapshot.Model, b *snapshot.Binding, t *admission.BatchTokens) *admission.Admission {
	rq.plan.Reset()
	rq.plan.Model = m
	rq.plan.Bindings = append(rq.plan.Bindings, routing.Candidate{Binding: b, Host: rq.snap.Host(b.HostID), Model: m, Skip: routing.Kept})
	rq.adm = admission.Admission{RequestID: rq.id, Caller: &rq.caller, Model: m, Plan: &rq.plan, Inbound: wire.InboundNone,
		Snapshot: rq.snap, Header: rq.r.Header, Batch: t}
	return &rq.adm
}

// batchStatus is what Relay reads of a batch object.
type batchStatus struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	OutputFileID string `json:"output_file_id"`
	ErrorFileID  string `json:"error_file_id"`
	Usage        *struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

func (s *batchStatus) terminal() bool {
	switch s.Status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// observeBatch keeps what the upstream just showed of a batch: the object
// for lists, its output and error files as the project's own, and once
// it has finished, its usage in the ledger. It reports whether the batch
// is done with: finished, and its usage recorded (by this pod or another)
// or none to record.
func (rq *request) observeBatch(ctx context.Context, o objects.Object, body []byte) bool {
	var s batchStatus
	if json.Unmarshal(body, &s) != nil || s.ID != o.ID {
		return false
	}
	st := objects.Seen(o.Kind, body, rq.at)
	if changed := st != nil && !st.Same(o.State); changed || len(body) <= maxObjectJSON {
		if len(body) <= maxObjectJSON {
			o.Attrs[attrObject] = string(body)
		}
		if st != nil {
			o.State = st
		}
		_ = rq.h.objects.Put(ctx, o)
	}
	for _, id := range [...]string{s.OutputFileID, s.ErrorFileID} {
		if id == "" {
			continue
		}
		if _, err := rq.h.objects.Get(ctx, o.ProjectID, objects.KindFile, id); errors.Is(err, objects.ErrNotFound) {
			_ = rq.h.objects.Put(ctx, objects.Object{ID: id, Kind: objects.KindFile, ProjectID: o.ProjectID, HostID: o.HostID, HostKeyID: o.HostKeyID,
				CreatedAt: rq.at, Attrs: map[string]string{attrPurpose: "batch_output", attrFilename: o.ID + "_output.jsonl"}})
		}
	}
	if !s.terminal() {
		return false
	}
	if s.Usage == nil {
		return rq.metered(ctx, o) // nothing to record
	}
	first, err := rq.h.objects.Claim(ctx, o.ProjectID, objects.KindBatch, o.ID, "usage")
	if err != nil {
		return false
	}
	if first {
		u := wire.Usage{Input: s.Usage.InputTokens, CacheRead: s.Usage.InputTokensDetails.CachedTokens,
			Output: s.Usage.OutputTokens, Reasoning: s.Usage.OutputTokensDetails.ReasoningTokens}
		rq.recordBatch(ctx, o, "batch", u)
	}
	return rq.metered(ctx, o)
}

// recordBatch records a finished batch's usage at the batch price,
// attributed to the caller that made it, and charges its budgets.
func (rq *request) recordBatch(ctx context.Context, o objects.Object, inbound string, u wire.Usage) {
	a := o.Attrs
	b := rq.snap.Binding(parseID(a[attrBinding]))
	kind, _ := strconv.Atoi(a[attrCredentialKind])
	rec := event.Record{
		RequestID: o.ID, At: rq.at, CredentialKind: snapshot.CredentialKind(kind), CredentialID: parseID(a[attrCredential]),
		ProjectID: o.ProjectID, TeamID: parseID(a[attrTeam]), ServiceAccountID: parseID(a[attrServiceAccount]), UserID: parseID(a[attrUser]),
		PolicyID: parseID(a[attrPolicy]), ModelID: parseID(a[attrModel]), BindingID: parseID(a[attrBinding]),
		HostID: o.HostID, HostKeyID: o.HostKeyID, Inbound: inbound, Status: http.StatusOK, Attempts: 1, Usage: u, Batch: true,
		Total: rq.at.Sub(o.CreatedAt),
	}
	if m := rq.snap.Model(rec.ModelID); m != nil {
		rec.Model = m.Name
		if b != nil {
			// Charge the budgets the same usage, at the batch price: a
			// zero estimate always fits, the settlement takes the cost.
			caller := snapshot.Caller{Kind: rec.CredentialKind, CredentialID: rec.CredentialID, ProjectID: rec.ProjectID, TeamID: rec.TeamID,
				ServiceAccountID: rec.ServiceAccountID, UserID: rec.UserID, Policy: rq.snap.Policy(rec.PolicyID)}
			saved := rq.caller
			rq.caller = caller
			done, err := rq.h.limiter.Admit(context.WithoutCancel(ctx), rq.batchAdmission(m, b, &admission.BatchTokens{}))
			rq.caller = saved
			if err == nil && done != nil {
				done(u)
			}
		}
	}
	if b != nil {
		rec.Upstream = b.Shape
	}
	if h := rq.snap.Host(o.HostID); h != nil {
		rec.HostSlug = h.Slug
	}
	rq.h.recorder.Record(rec)
}

// refreshBatches retrieves the listed batches that have not finished, so
// a list shows each as it is (and a finished one is metered).
func (rq *request) refreshBatches(ctx context.Context, list []objects.Object) {
	for i := range list {
		o := &list[i]
		var s batchStatus
		if json.Unmarshal([]byte(o.Attrs[attrObject]), &s) == nil && s.terminal() {
			continue
		}
		resp, ok := rq.quietObjectCall(ctx, *o, "/v1/batches/"+url.PathEscape(o.ID))
		if !ok {
			continue
		}
		body := rq.objectAnswer(resp, *o)
		resp.Body.Close()
		if resp.StatusCode < 300 {
			rq.observeBatch(ctx, *o, body)
			if len(body) <= maxObjectJSON {
				o.Attrs[attrObject] = string(body)
			}
		}
	}
}
