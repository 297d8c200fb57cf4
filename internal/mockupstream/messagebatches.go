package mockupstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Anthropic's Message Batches, /v1/messages/batches[/{id}[/results|
// /cancel]], in Anthropic's shapes. A batch belongs to the credential that
// made it, as the files and batches of files.go do: another key's id is
// the 404 a missing one gets, and a list holds the key's own batches.
//
// The lifecycle is deterministic: a batch is created in_progress with
// every request processing; the first retrieve or list that shows it runs
// each request through the mock's own /v1/messages with the batch's
// credential and ends it (processing_status "ended", request_counts of
// succeeded and errored, results_url set). Cancel moves a running batch to
// canceling, and the next retrieve ends it with every request canceled.
// Results, a JSONL line per request ({"custom_id","result":{"type":
// "succeeded","message":…} or {"type":"errored","error":…}}), are served
// once the batch has ended; delete works on an ended batch only.

// maxBatchRequests is Anthropic's limit on a batch's requests.
const maxBatchRequests = 100_000

var customIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

type mockMessageBatch struct {
	owner    string
	apiKey   string
	version  string
	seq      int64
	requests []messageBatchRequest
	results  []byte
	obj      messageBatchObject
}

type messageBatchRequest struct {
	CustomID string          `json:"custom_id"`
	Params   json.RawMessage `json:"params"`
}

type messageBatchCounts struct {
	Processing int `json:"processing"`
	Succeeded  int `json:"succeeded"`
	Errored    int `json:"errored"`
	Canceled   int `json:"canceled"`
	Expired    int `json:"expired"`
}

type messageBatchObject struct {
	ID                string             `json:"id"`
	Type              string             `json:"type"`
	ProcessingStatus  string             `json:"processing_status"`
	RequestCounts     messageBatchCounts `json:"request_counts"`
	EndedAt           *string            `json:"ended_at"`
	CreatedAt         string             `json:"created_at"`
	ExpiresAt         string             `json:"expires_at"`
	ArchivedAt        *string            `json:"archived_at"`
	CancelInitiatedAt *string            `json:"cancel_initiated_at"`
	ResultsURL        *string            `json:"results_url"`
}

func messageBatchID() string { return randomID("msgbatch_01", 22, alphaBase62) }

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// messageBatchRoute tells a Message Batches path apart: the id and the
// sub-resource; ok false for other paths.
func messageBatchRoute(path string) (id, sub string, ok bool) {
	i := strings.Index(path, "/messages/batches")
	if i < 0 {
		return "", "", false
	}
	rest := path[i+len("/messages/batches"):]
	if rest != "" && rest[0] != '/' {
		return "", "", false
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case len(segs) > 2:
		return "", "", false
	case len(segs) == 2:
		sub = segs[1]
	}
	return segs[0], sub, true
}

// serveMessageBatches serves r if it is a Message Batches call.
func (s *Server) serveMessageBatches(w http.ResponseWriter, r *http.Request) bool {
	id, sub, ok := messageBatchRoute(r.URL.Path)
	if !ok {
		return false
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Shape: ShapeAnthropic, ReceivedAt: time.Now()}
	if r.Method == http.MethodPost && id == "" {
		// A create's body is recorded, so tests see what was sent.
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxFileBytes+1))
		rec.Body = body
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	var seq uint64
	if s.record > 0 {
		seq = s.insert(rec)
	}
	sw := &statusWriter{ResponseWriter: w}
	c := &call{prov: provAnthropic, r: r}
	owner := r.Header.Get("X-Api-Key")
	if owner == "" {
		owner = bearer(r.Header)
	}
	var e *apiError
	switch {
	case owner == "":
		e = &apiError{kind: errAuth, msg: "x-api-key header is required"}
	case !s.keyAccepted(owner):
		e = &apiError{kind: errAuth}
	case r.Header.Get("Anthropic-Version") == "":
		e = &apiError{kind: errInvalid, msg: "anthropic-version: header is required"}
	case s.statusFault(r) != 0:
		_, _ = io.Copy(io.Discard, r.Body)
		st := s.statusFault(r)
		e = &apiError{status: st, kind: kindForStatus(st)}
	default:
		e = s.objects.serveMessageBatch(s, sw, r, owner, id, sub)
	}
	if e != nil {
		body, _ := json.Marshal(c.anthropicErrorBody(e))
		sw.Header().Set("Content-Type", "application/json")
		sw.Header().Set("Request-Id", c.ensureRequestID())
		sw.WriteHeader(c.errorStatus(e))
		_, _ = sw.Write(body)
	}
	if s.record > 0 {
		rec.Status = sw.status
		rec.FinishedAt = time.Now()
		s.complete(seq, &rec)
	}
	return true
}

func noSuchMessageBatch(id string) *apiError {
	return &apiError{kind: errNotFound, msg: "Message Batch with id " + id + " not found."}
}

func writeAnthropicJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Request-Id", anthropicReqID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func (o *objectStore) serveMessageBatch(s *Server, w http.ResponseWriter, r *http.Request, owner, id, sub string) *apiError {
	switch {
	case id == "" && r.Method == http.MethodPost:
		return o.createMessageBatch(w, r, owner)
	case id == "" && r.Method == http.MethodGet:
		return o.listMessageBatches(s, w, r, owner)
	case id == "" || (sub != "" && sub != "results" && sub != "cancel"):
		return &apiError{kind: errNotFound, msg: "Not Found"}
	}
	o.mu.Lock()
	b := o.msgBatches[id]
	if b != nil && b.owner != owner {
		b = nil
	}
	o.mu.Unlock()
	if b == nil {
		return noSuchMessageBatch(id)
	}
	switch {
	case sub == "" && r.Method == http.MethodGet:
		writeAnthropicJSON(w, o.advanceMessageBatch(s, b))
	case sub == "" && r.Method == http.MethodDelete:
		o.mu.Lock()
		defer o.mu.Unlock()
		if b.obj.ProcessingStatus != "ended" {
			return &apiError{kind: errInvalid, msg: "Message Batch " + id + " cannot be deleted while it is still processing; cancel it first."}
		}
		delete(o.msgBatches, id)
		writeAnthropicJSON(w, map[string]string{"id": id, "type": "message_batch_deleted"})
	case sub == "cancel" && r.Method == http.MethodPost:
		o.mu.Lock()
		defer o.mu.Unlock()
		if b.obj.ProcessingStatus == "in_progress" {
			now := rfc3339(time.Now())
			b.obj.ProcessingStatus, b.obj.CancelInitiatedAt = "canceling", &now
		}
		writeAnthropicJSON(w, b.obj)
	case sub == "results" && r.Method == http.MethodGet:
		o.mu.Lock()
		ended, results := b.obj.ProcessingStatus == "ended", b.results
		o.mu.Unlock()
		if !ended {
			return &apiError{kind: errInvalid, msg: "Message Batch " + id + " has not yet ended; results are available once processing_status is ended."}
		}
		w.Header().Set("Content-Type", "application/binary")
		w.Header().Set("Content-Length", strconv.Itoa(len(results)))
		w.Header().Set("Request-Id", anthropicReqID())
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(results)
	default:
		return &apiError{kind: errMethod}
	}
	return nil
}

func (o *objectStore) createMessageBatch(w http.ResponseWriter, r *http.Request, owner string) *apiError {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFileBytes+1))
	if err != nil {
		return &apiError{kind: errInvalid, msg: "Could not read the request body."}
	}
	if len(body) > maxFileBytes {
		return &apiError{kind: errTooLarge}
	}
	var req struct {
		Requests []messageBatchRequest `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return &apiError{kind: errInvalid, msg: "There was an issue with your request. Please check your request body: " + err.Error()}
	}
	switch {
	case len(req.Requests) == 0:
		return &apiError{kind: errInvalid, msg: "requests: List should have at least 1 item after validation, not 0"}
	case len(req.Requests) > maxBatchRequests:
		return &apiError{kind: errInvalid, msg: "requests: List should have at most 100000 items after validation"}
	}
	seen := map[string]bool{}
	for i, rq := range req.Requests {
		at := "requests." + strconv.Itoa(i)
		switch {
		case !customIDPattern.MatchString(rq.CustomID):
			return &apiError{kind: errInvalid, msg: at + ".custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"}
		case seen[rq.CustomID]:
			return &apiError{kind: errInvalid, msg: at + ".custom_id: Duplicate custom_id: " + rq.CustomID}
		case len(bytes.TrimSpace(rq.Params)) == 0 || bytes.TrimSpace(rq.Params)[0] != '{':
			return &apiError{kind: errInvalid, msg: at + ".params: Input should be an object"}
		}
		seen[rq.CustomID] = true
	}
	now := time.Now()
	apiKey := r.Header.Get("X-Api-Key")
	if apiKey == "" {
		apiKey = owner
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.msgBatches == nil {
		o.msgBatches = make(map[string]*mockMessageBatch)
	}
	o.seq++
	b := &mockMessageBatch{owner: owner, apiKey: apiKey, version: r.Header.Get("Anthropic-Version"), seq: o.seq, requests: req.Requests,
		obj: messageBatchObject{
			ID: messageBatchID(), Type: "message_batch", ProcessingStatus: "in_progress",
			RequestCounts: messageBatchCounts{Processing: len(req.Requests)},
			CreatedAt:     rfc3339(now), ExpiresAt: rfc3339(now.Add(24 * time.Hour)),
		}}
	o.msgBatches[b.obj.ID] = b
	writeAnthropicJSON(w, b.obj)
	return nil
}

// listMessageBatches answers a page, newest first: limit (1–1000, 20 by
// default), after_id and before_id.
func (o *objectStore) listMessageBatches(s *Server, w http.ResponseWriter, r *http.Request, owner string) *apiError {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return &apiError{kind: errInvalid, msg: "limit: Input should be between 1 and 1000"}
		}
		limit = n
	}
	o.mu.Lock()
	var bs []*mockMessageBatch
	for _, b := range o.msgBatches {
		if b.owner == owner {
			bs = append(bs, b)
		}
	}
	o.mu.Unlock()
	sort.Slice(bs, func(i, j int) bool { return bs[i].seq > bs[j].seq })
	if after := q.Get("after_id"); after != "" {
		for i, b := range bs {
			if b.obj.ID == after {
				bs = bs[i+1:]
				break
			}
		}
	}
	if before := q.Get("before_id"); before != "" {
		for i, b := range bs {
			if b.obj.ID == before {
				bs = bs[max(0, i-limit):i]
				break
			}
		}
	}
	more := len(bs) > limit
	if more {
		bs = bs[:limit]
	}
	objs := make([]messageBatchObject, len(bs))
	for i, b := range bs {
		objs[i] = o.advanceMessageBatch(s, b)
	}
	var first, last any
	if len(objs) > 0 {
		first, last = objs[0].ID, objs[len(objs)-1].ID
	}
	writeAnthropicJSON(w, map[string]any{"data": objs, "has_more": more, "first_id": first, "last_id": last})
	return nil
}

// advanceMessageBatch ends a running or canceling batch and returns its
// object as it now is.
func (o *objectStore) advanceMessageBatch(s *Server, b *mockMessageBatch) messageBatchObject {
	o.mu.Lock()
	status := b.obj.ProcessingStatus
	o.mu.Unlock()
	if status == "ended" {
		o.mu.Lock()
		defer o.mu.Unlock()
		return b.obj
	}
	var results []byte
	var counts messageBatchCounts
	for _, rq := range b.requests {
		var res any
		if status == "canceling" {
			counts.Canceled++
			res = map[string]string{"type": "canceled"}
		} else {
			res = s.runMessageBatchRequest(b, rq, &counts)
		}
		line, _ := json.Marshal(map[string]any{"custom_id": rq.CustomID, "result": res})
		results = append(append(results, line...), '\n')
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if b.obj.ProcessingStatus != "ended" {
		now := rfc3339(time.Now())
		url := "https://api.anthropic.com/v1/messages/batches/" + b.obj.ID + "/results"
		b.obj.ProcessingStatus, b.obj.EndedAt, b.obj.ResultsURL, b.obj.RequestCounts, b.results = "ended", &now, &url, counts, results
	}
	return b.obj
}

// runMessageBatchRequest runs one request through the mock's Messages
// endpoint and returns its result.
func (s *Server) runMessageBatchRequest(b *mockMessageBatch, rq messageBatchRequest, counts *messageBatchCounts) any {
	var p struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(rq.Params, &p)
	status, body := http.StatusBadRequest, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"stream: Streaming is not supported in the Message Batches API."}}`)
	if !p.Stream {
		req, _ := http.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(rq.Params))
		req.Header.Set("X-Api-Key", b.apiKey)
		req.Header.Set("Anthropic-Version", b.version)
		req.Header.Set("Content-Type", "application/json")
		rr := &bufferWriter{header: http.Header{}}
		s.ServeHTTP(rr, req)
		status, body = rr.status, rr.buf.Bytes()
	}
	if status/100 == 2 {
		counts.Succeeded++
		return map[string]any{"type": "succeeded", "message": json.RawMessage(body)}
	}
	counts.Errored++
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if len(e.Error) == 0 {
		e.Error = json.RawMessage(`{"type":"api_error","message":"Internal server error"}`)
	}
	return map[string]any{"type": "errored", "error": map[string]any{"type": "error", "error": e.Error}}
}
