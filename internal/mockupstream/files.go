package mockupstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Files and batches, in OpenAI's shapes (/v1/files, /v1/batches). Objects
// belong to the credential that made them, as a provider's belong to the
// account of the API key: another key's id is a 404, exactly as a missing
// one, and a list holds the key's own objects only. So a test can tell
// which host key a follow-up call went through.
//
// A batch moves one step on every retrieve or list that shows it:
// validating (at create) → in_progress → completed, deterministic rather
// than timed. When it completes, each input line runs through the mock's
// own endpoint (chat completions, embeddings, responses) with the batch's
// credential, and the answers become the output file (2xx) and the error
// file (others), one JSONL line each ({"id","custom_id","response":
// {"status_code","request_id","body"},"error"}); the batch reports the
// model and the summed usage as OpenAI's batch object does. Cancel moves a
// running batch to cancelling, and the next retrieve to cancelled.

// maxFileBytes bounds an uploaded file.
const maxFileBytes = 64 << 20

// objectStore is the server's files and batches.
type objectStore struct {
	mu      sync.Mutex
	files   map[string]*mockFile
	batches map[string]*mockBatch
	// msgBatches are Anthropic's Message Batches (messagebatches.go).
	msgBatches map[string]*mockMessageBatch
	seq        int64 // orders objects made in the same second
}

type mockFile struct {
	owner   string
	seq     int64
	obj     fileObject
	content []byte
}

type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int64   `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

type mockBatch struct {
	owner string
	auth  string // the Authorization header the lines run with
	seq   int64
	obj   batchObject
}

type batchCounts struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Total     int `json:"total"`
}

type batchUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Model            string            `json:"model,omitempty"`
	Errors           *json.RawMessage  `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        int64             `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    batchCounts       `json:"request_counts"`
	Usage            *batchUsage       `json:"usage,omitempty"`
	Metadata         map[string]string `json:"metadata"`
}

func fileID() string         { return randomID("file-", 22, alphaBase62) }
func batchID() string        { return randomID("batch_", 32, alphaHex) }
func batchRequestID() string { return randomID("batch_req_", 32, alphaHex) }

// objectRoute tells an OpenAI files or batches path apart: the collection
// ("files" or "batches"), the id and the sub-resource ("content",
// "cancel"); ok false for other paths.
func objectRoute(path string) (coll, id, sub string, ok bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if (s != "files" && s != "batches") || (i > 0 && segs[i-1] == "messages") {
			continue
		}
		rest := segs[i+1:]
		if len(rest) > 2 {
			return "", "", "", false
		}
		coll = s
		if len(rest) > 0 {
			id = rest[0]
		}
		if len(rest) > 1 {
			sub = rest[1]
		}
		return coll, id, sub, true
	}
	return "", "", "", false
}

// serveObjects serves r if it is a files or batches call.
func (s *Server) serveObjects(w http.ResponseWriter, r *http.Request) bool {
	coll, id, sub, ok := objectRoute(r.URL.Path)
	if !ok {
		return false
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Shape: ShapeOpenAI, ReceivedAt: time.Now()}
	var seq uint64
	if s.record > 0 {
		seq = s.insert(rec)
	}
	sw := &statusWriter{ResponseWriter: w}
	owner := bearer(r.Header)
	var e *apiError
	switch {
	case !s.keyAccepted(owner):
		e = &apiError{kind: errAuth, msg: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."}
	case s.statusFault(r) != 0:
		_, _ = io.Copy(io.Discard, r.Body)
		st := s.statusFault(r)
		e = &apiError{status: st, kind: kindForStatus(st)}
	case coll == "files":
		e = s.objects.serveFile(s, sw, r, owner, id, sub)
	default:
		e = s.objects.serveBatch(s, sw, r, owner, id, sub)
	}
	if e != nil {
		writeOpenAIError(sw, e)
	}
	if s.record > 0 {
		rec.Status = sw.status
		rec.FinishedAt = time.Now()
		s.complete(seq, &rec)
	}
	return true
}

func noSuchFile(id string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: errNotFound, param: "id", msg: "No such File object: " + id}
}

func noSuchBatch(id string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: errNotFound, msg: "No batch found with id '" + id + "'."}
}

func methodNotAllowed() *apiError {
	return &apiError{status: http.StatusMethodNotAllowed, kind: errInvalid, msg: "Method not allowed."}
}

// filePurposes are the purposes an upload may name.
var filePurposes = map[string]bool{"assistants": true, "batch": true, "fine-tune": true, "vision": true, "user_data": true, "evals": true}

func (o *objectStore) serveFile(s *Server, w http.ResponseWriter, r *http.Request, owner, id, sub string) *apiError {
	switch {
	case id == "" && r.Method == http.MethodPost:
		return o.upload(w, r, owner, s.opts.FileDigests)
	case id == "" && r.Method == http.MethodGet:
		return o.listFiles(w, r, owner)
	case id == "" || (sub != "" && sub != "content"):
		return &apiError{status: http.StatusNotFound, kind: errNotFound, msg: "Invalid URL (" + r.Method + " " + r.URL.Path + ")"}
	}
	o.mu.Lock()
	f := o.files[id]
	if f != nil && f.owner != owner {
		f = nil
	}
	o.mu.Unlock()
	if f == nil {
		return noSuchFile(id)
	}
	switch {
	case sub == "content" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(f.content)))
		w.Header().Set("X-Request-Id", openAIRequestID())
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(f.content)
	case sub == "" && r.Method == http.MethodGet:
		writeJSON(w, f.obj)
	case sub == "" && r.Method == http.MethodDelete:
		o.mu.Lock()
		delete(o.files, id)
		o.mu.Unlock()
		writeJSON(w, map[string]any{"id": id, "object": "file", "deleted": true})
	default:
		return methodNotAllowed()
	}
	return nil
}

// upload reads a multipart upload as a stream: purpose and file (with
// digests, only the file's size and SHA-256: Options.FileDigests).
func (o *objectStore) upload(w http.ResponseWriter, r *http.Request, owner string, digests bool) *apiError {
	mr, err := r.MultipartReader()
	if err != nil {
		return &apiError{kind: errInvalid, msg: "Invalid multipart form: " + err.Error()}
	}
	var purpose, filename string
	var content []byte
	size := int64(-1) // a digested file's
	haveFile := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &apiError{kind: errInvalid, msg: "Invalid multipart form: " + err.Error()}
		}
		if digests && p.FormName() == "file" {
			h := sha256.New()
			n, err := io.Copy(h, io.LimitReader(p, maxFileBytes+1))
			if err != nil {
				return &apiError{kind: errInvalid, msg: "Invalid multipart form: " + err.Error()}
			}
			if n > maxFileBytes {
				return &apiError{kind: errTooLarge, msg: "The file is too large."}
			}
			filename, content, size, haveFile = p.FileName(), []byte("sha256:"+hex.EncodeToString(h.Sum(nil))), n, true
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p, maxFileBytes+1))
		if err != nil {
			return &apiError{kind: errInvalid, msg: "Invalid multipart form: " + err.Error()}
		}
		if len(b) > maxFileBytes {
			return &apiError{kind: errTooLarge, msg: "The file is too large."}
		}
		switch p.FormName() {
		case "purpose":
			purpose = string(b)
		case "file":
			filename, content, haveFile = p.FileName(), b, true
		}
	}
	switch {
	case !haveFile:
		return &apiError{kind: errInvalid, param: "file", msg: "Missing required parameter: 'file'."}
	case !filePurposes[purpose]:
		return &apiError{kind: errInvalid, param: "purpose", msg: "'" + purpose + "' is not one of ['fine-tune', 'assistants', 'batch', 'user_data', 'vision', 'evals'] - 'purpose'"}
	}
	f := o.addFile(owner, filename, purpose, content)
	if size >= 0 {
		o.mu.Lock()
		f.obj.Bytes = size
		o.mu.Unlock()
	}
	writeJSON(w, f.obj)
	return nil
}

func (o *objectStore) addFile(owner, filename, purpose string, content []byte) *mockFile {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files == nil {
		o.files = make(map[string]*mockFile)
	}
	o.seq++
	f := &mockFile{owner: owner, seq: o.seq, content: content, obj: fileObject{
		ID: fileID(), Object: "file", Bytes: int64(len(content)), CreatedAt: time.Now().Unix(),
		Filename: filename, Purpose: purpose, Status: "processed",
	}}
	o.files[f.obj.ID] = f
	return f
}

// page answers one page of a list, newest first: limit (1–10000, 20 by
// default for files; 1–100 for batches) and after (an id).
func page[T any](w http.ResponseWriter, r *http.Request, items []T, id func(T) string, maxLimit int) *apiError {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return &apiError{kind: errInvalid, param: "limit", msg: "Invalid limit: must be between 1 and " + strconv.Itoa(maxLimit) + "."}
		}
		limit = n
	}
	if after := q.Get("after"); after != "" {
		for i, it := range items {
			if id(it) == after {
				items = items[i+1:]
				break
			}
		}
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	var first, last any
	if len(items) > 0 {
		first, last = id(items[0]), id(items[len(items)-1])
	}
	if items == nil {
		items = []T{}
	}
	writeJSON(w, map[string]any{"object": "list", "data": items, "first_id": first, "last_id": last, "has_more": more})
	return nil
}

func (o *objectStore) listFiles(w http.ResponseWriter, r *http.Request, owner string) *apiError {
	purpose := r.URL.Query().Get("purpose")
	o.mu.Lock()
	var fs []*mockFile
	for _, f := range o.files {
		if f.owner == owner && (purpose == "" || f.obj.Purpose == purpose) {
			fs = append(fs, f)
		}
	}
	o.mu.Unlock()
	sort.Slice(fs, func(i, j int) bool { return fs[i].seq > fs[j].seq })
	objs := make([]fileObject, len(fs))
	for i, f := range fs {
		objs[i] = f.obj
	}
	return page(w, r, objs, func(f fileObject) string { return f.ID }, 10000)
}

// batchEndpoints are the endpoints a batch may run.
var batchEndpoints = map[string]bool{"/v1/chat/completions": true, "/v1/embeddings": true, "/v1/responses": true, "/v1/completions": true}

func (o *objectStore) serveBatch(s *Server, w http.ResponseWriter, r *http.Request, owner, id, sub string) *apiError {
	switch {
	case id == "" && r.Method == http.MethodPost:
		return o.createBatch(w, r, owner)
	case id == "" && r.Method == http.MethodGet:
		o.mu.Lock()
		var bs []*mockBatch
		for _, b := range o.batches {
			if b.owner == owner {
				bs = append(bs, b)
			}
		}
		o.mu.Unlock()
		sort.Slice(bs, func(i, j int) bool { return bs[i].seq > bs[j].seq })
		objs := make([]batchObject, len(bs))
		for i, b := range bs {
			objs[i] = o.advance(s, b)
		}
		return page(w, r, objs, func(b batchObject) string { return b.ID }, 100)
	case id == "" || (sub != "" && sub != "cancel"):
		return &apiError{status: http.StatusNotFound, kind: errNotFound, msg: "Invalid URL (" + r.Method + " " + r.URL.Path + ")"}
	}
	o.mu.Lock()
	b := o.batches[id]
	if b != nil && b.owner != owner {
		b = nil
	}
	o.mu.Unlock()
	switch {
	case b == nil:
		return noSuchBatch(id)
	case sub == "" && r.Method == http.MethodGet:
		writeJSON(w, o.advance(s, b))
	case sub == "cancel" && r.Method == http.MethodPost:
		o.mu.Lock()
		defer o.mu.Unlock()
		switch b.obj.Status {
		case "validating", "in_progress", "finalizing":
			now := time.Now().Unix()
			b.obj.Status, b.obj.CancellingAt = "cancelling", &now
		case "cancelling", "cancelled":
		default:
			return &apiError{status: http.StatusConflict, kind: errInvalid, msg: "Cannot cancel a batch with status '" + b.obj.Status + "'."}
		}
		writeJSON(w, b.obj)
	default:
		return methodNotAllowed()
	}
	return nil
}

func (o *objectStore) createBatch(w http.ResponseWriter, r *http.Request, owner string) *apiError {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if e := readJSON(r, &exchange{}, &req); e != nil {
		return e
	}
	switch {
	case !batchEndpoints[req.Endpoint]:
		return &apiError{kind: errInvalid, param: "endpoint", msg: "Invalid value for 'endpoint': '" + req.Endpoint + "'."}
	case req.CompletionWindow != "24h":
		return &apiError{kind: errInvalid, param: "completion_window", msg: "Invalid value for 'completion_window': only '24h' is supported."}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.files[req.InputFileID]
	if f == nil || f.owner != owner {
		return &apiError{status: http.StatusNotFound, kind: errNotFound, param: "input_file_id", msg: "No such File object: " + req.InputFileID}
	}
	if f.obj.Purpose != "batch" {
		return &apiError{kind: errInvalid, param: "input_file_id", msg: "The input file must have purpose 'batch'."}
	}
	if o.batches == nil {
		o.batches = make(map[string]*mockBatch)
	}
	o.seq++
	now := time.Now().Unix()
	b := &mockBatch{owner: owner, auth: r.Header.Get("Authorization"), seq: o.seq, obj: batchObject{
		ID: batchID(), Object: "batch", Endpoint: req.Endpoint, InputFileID: req.InputFileID,
		CompletionWindow: req.CompletionWindow, Status: "validating", CreatedAt: now, ExpiresAt: now + 24*3600,
		RequestCounts: batchCounts{Total: bytes.Count(bytes.TrimSpace(f.content), []byte("\n")) + 1}, Metadata: req.Metadata,
	}}
	o.batches[b.obj.ID] = b
	writeJSON(w, b.obj)
	return nil
}

// advance moves b one step on and returns its object as it now is.
func (o *objectStore) advance(s *Server, b *mockBatch) batchObject {
	o.mu.Lock()
	now := time.Now().Unix()
	switch b.obj.Status {
	case "validating":
		b.obj.Status, b.obj.InProgressAt = "in_progress", &now
	case "cancelling":
		b.obj.Status, b.obj.CancelledAt = "cancelled", &now
	case "in_progress":
		b.obj.Status = "finalizing" // while the lines run, as a retrieve meanwhile sees it
		f := o.files[b.obj.InputFileID]
		o.mu.Unlock()
		var input []byte
		if f != nil {
			input = f.content
		}
		out, errs, counts, usage, model := s.runBatch(b, input)
		var outID, errID *string
		if len(out) > 0 {
			id := o.addFile(b.owner, "batch_"+b.obj.ID+"_output.jsonl", "batch_output", out).obj.ID
			outID = &id
		}
		if len(errs) > 0 {
			id := o.addFile(b.owner, "batch_"+b.obj.ID+"_error.jsonl", "batch_output", errs).obj.ID
			errID = &id
		}
		o.mu.Lock()
		b.obj.FinalizingAt, b.obj.CompletedAt = &now, &now
		b.obj.Status, b.obj.RequestCounts, b.obj.Usage, b.obj.Model = "completed", counts, &usage, model
		b.obj.OutputFileID, b.obj.ErrorFileID = outID, errID
	}
	obj := b.obj
	o.mu.Unlock()
	return obj
}

// runBatch runs each line of input through the mock itself.
func (s *Server) runBatch(b *mockBatch, input []byte) (out, errs []byte, counts batchCounts, usage batchUsage, model string) {
	for _, line := range bytes.Split(bytes.TrimSpace(input), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		counts.Total++
		var in struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		status, body := http.StatusBadRequest, []byte(`{"error":{"message":"Invalid batch line.","type":"invalid_request_error","param":null,"code":null}}`)
		if json.Unmarshal(line, &in) == nil && in.URL == b.obj.Endpoint && in.Method == http.MethodPost {
			req, _ := http.NewRequest(http.MethodPost, in.URL, bytes.NewReader(in.Body))
			req.Header.Set("Authorization", b.auth)
			req.Header.Set("Content-Type", "application/json")
			rr := &bufferWriter{header: http.Header{}}
			s.ServeHTTP(rr, req)
			status, body = rr.status, rr.buf.Bytes()
		}
		var got struct {
			Model string `json:"model"`
			Usage struct {
				PromptTokens        int64 `json:"prompt_tokens"`
				CompletionTokens    int64 `json:"completion_tokens"`
				InputTokens         int64 `json:"input_tokens"`
				OutputTokens        int64 `json:"output_tokens"`
				PromptTokensDetails struct {
					CachedTokens int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				CompletionTokensDetails struct {
					ReasoningTokens int64 `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(body, &got)
		res, _ := json.Marshal(map[string]any{
			"id": batchRequestID(), "custom_id": in.CustomID, "error": nil,
			"response": map[string]any{"status_code": status, "request_id": openAIRequestID(), "body": json.RawMessage(body)},
		})
		res = append(res, '\n')
		if status/100 != 2 {
			counts.Failed++
			errs = append(errs, res...)
			continue
		}
		counts.Completed++
		out = append(out, res...)
		if model == "" {
			model = got.Model
		}
		u := got.Usage
		usage.InputTokens += u.PromptTokens + u.InputTokens
		usage.OutputTokens += u.CompletionTokens + u.OutputTokens
		usage.InputTokensDetails.CachedTokens += u.PromptTokensDetails.CachedTokens
		usage.OutputTokensDetails.ReasoningTokens += u.CompletionTokensDetails.ReasoningTokens
	}
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	return out, errs, counts, usage, model
}

// bufferWriter is an in-memory http.ResponseWriter for a batch's lines.
type bufferWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }

func (w *bufferWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(p)
}
