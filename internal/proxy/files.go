package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/spill"
	"github.com/relay-llm/relay/internal/wire"
)

// Upstream objects: OpenAI's /v1/files and /v1/batches (batches.go).
// Each object is made through one host key and lives only there, so Relay
// indexes it (package objects: project, host, host key, kind) when the
// upstream answers its creation, and every later call on it — from any
// pod, without Postgres — finds it under the caller's project and goes to
// that host key. Another project's id is not in the caller's part of the
// index, so it gets the very 404 a missing id gets, before anything goes
// upstream; a list is the caller's part of the index, never the shared
// host key's upstream list.
//
// Where an upload goes: a batch input file (purpose "batch") to the first
// binding of the model its lines name (one model per file, as OpenAI
// requires) with a host key the policy grants; any other file to the
// first such binding of the first model the policy grants, in catalog
// order. Relay rewrites each batch line's model to that binding's upstream
// model (the caller writes catalog names, as in any request) and keeps the
// lines' token estimate with the file, for the budget check at batch
// creation.

// objectsTimeout bounds one call on an upstream object (uploads included).
const objectsTimeout = 2 * time.Minute

// objectRoute is one of the collections of objects an upstream keeps for
// the key that made them and Relay keeps for the project that made them
// (files, batches, message batches): creating and listing are the route's
// own; an object's retrieve, sub-resources and delete go to the key that
// made it, and answer sends what it said on.
type objectRoute struct {
	prefix  string // the collection's path, here and upstream
	dialect wire.Dialect
	kind    objects.Kind
	methods map[string]string // by sub-path, as objectMethods takes them
	create  func(*request, context.Context)
	list    func(*request, context.Context)
	answer  func(rq *request, ctx context.Context, o objects.Object, id, sub string, resp *http.Response)
}

// serveObjectRoute serves path if it is a files, batches or message
// batches route.
func (h *Handler) serveObjectRoute(rq *request, path string) bool {
	for _, r := range [...]objectRoute{
		{prefix: "/v1/files", dialect: wire.DialectOpenAI, kind: objects.KindFile,
			methods: map[string]string{"": "GET or POST", "id": "GET or DELETE", "content": "GET"},
			create:  (*request).uploadFile,
			list:    func(rq *request, ctx context.Context) { rq.listObjects(ctx, objects.KindFile, 10000) },
			answer:  (*request).answerFile},
		{prefix: "/v1/batches", dialect: wire.DialectOpenAI, kind: objects.KindBatch,
			methods: map[string]string{"": "GET or POST", "id": "GET", "cancel": "POST"},
			create:  (*request).createBatch,
			list:    func(rq *request, ctx context.Context) { rq.listObjects(ctx, objects.KindBatch, 100) },
			answer:  (*request).answerBatch},
		{prefix: messageBatchPrefix, dialect: wire.DialectAnthropic, kind: objects.KindMessageBatch,
			methods: map[string]string{"": "GET or POST", "id": "GET or DELETE", "cancel": "POST", "results": "GET"},
			create:  (*request).createMessageBatch,
			list:    (*request).listMessageBatches,
			answer:  (*request).answerMessageBatch},
	} {
		rest, ok := strings.CutPrefix(path, r.prefix)
		if ok && (rest == "" || rest[0] == '/') {
			defer rq.finish()
			rq.call.Dialect = r.dialect
			if err := checkHeaderBounds(rq.r.Header, h.maxHeaders, h.maxHeaderBytes); err != nil {
				rq.fail(err)
				return true
			}
			rq.serveObjects(&r, strings.TrimPrefix(rest, "/"))
			return true
		}
	}
	return false
}

// serveObjects answers rt's collection (rest ""), one of its objects
// (rest its id) or an object's sub-resource (id/sub).
func (rq *request) serveObjects(rt *objectRoute, rest string) {
	id, sub, _ := strings.Cut(rest, "/")
	if !rq.objectMethods(id, sub, rt.methods) {
		return
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), objectsTimeout)
	defer cancel()
	switch {
	case id == "" && rq.r.Method == http.MethodPost:
		rt.create(rq, ctx)
		return
	case id == "":
		rt.list(rq, ctx)
		return
	}
	o, ok := rq.ownObject(ctx, rt.kind, id)
	if !ok {
		return
	}
	path := rt.prefix + "/" + url.PathEscape(id)
	if sub != "" {
		path += "/" + sub
	}
	resp, ok := rq.objectCall(ctx, o, rq.r.Method, path, nil, "")
	if !ok {
		return
	}
	defer resp.Body.Close()
	rt.answer(rq, ctx, o, id, sub, resp)
}

// objectMethods checks the method of an object route: allowed lists the
// methods by sub-path ("" the collection, "id" an object, else a sub
// resource); false once it has answered.
func (rq *request) objectMethods(id, sub string, allowed map[string]string) bool {
	key := sub
	switch {
	case id == "":
		key = ""
	case sub == "":
		key = "id"
	}
	want, ok := allowed[key]
	switch {
	case !ok || strings.Contains(sub, "/"):
		rq.fail(wire.Errorf(wire.ErrNotFound, "No such endpoint: %s %s.", rq.r.Method, rq.r.URL.Path))
		return false
	case !slices.Contains(strings.Split(want, " or "), rq.r.Method):
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use %s for %s.", want, rq.r.URL.Path))
		return false
	}
	return rq.authenticate()
}

// answerFile sends on the upstream's answer on a file or its content.
func (rq *request) answerFile(ctx context.Context, o objects.Object, id, sub string, resp *http.Response) {
	if sub == "content" && resp.StatusCode < 300 {
		rq.streamObject(resp)
		return
	}
	body := rq.objectAnswer(resp, o)
	if rq.r.Method == http.MethodDelete && (resp.StatusCode < 300 || resp.StatusCode == http.StatusNotFound) {
		_ = rq.h.objects.Delete(ctx, rq.caller.ProjectID, objects.KindFile, id)
	}
	rq.respond(resp.StatusCode, "application/json", body)
}

// ownObject finds the caller's object; false once it has answered (404
// for another project's id as for a missing one).
func (rq *request) ownObject(ctx context.Context, kind objects.Kind, id string) (objects.Object, bool) {
	o, err := rq.h.objects.Get(ctx, rq.caller.ProjectID, kind, id)
	switch {
	case errors.Is(err, objects.ErrNotFound):
		rq.fail(noSuchObject(kind, id, "id"))
		return o, false
	case err != nil:
		rq.indexFailed(err)
		return o, false
	}
	return o, true
}

// noSuchObject is OpenAI's answer for an unknown id.
func noSuchObject(kind objects.Kind, id, param string) error {
	switch kind {
	case objects.KindBatch:
		return &wire.Error{Kind: wire.ErrNotFound, Param: param, Msg: "No batch found with id '" + id + "'."}
	case objects.KindMessageBatch:
		return &wire.Error{Kind: wire.ErrNotFound, Param: param, Msg: "No message batch found with id '" + id + "'."}
	}
	return &wire.Error{Kind: wire.ErrNotFound, Param: param, Msg: "No such File object: " + id}
}

func (rq *request) indexFailed(err error) {
	rq.h.log.Warn("object index", "request_id", rq.id, "error", err)
	rq.fail(wire.Errorf(wire.ErrUnavailable, "Relay's object index is unavailable; retry shortly."))
}

// objectCall sends one call on an upstream object to the host key that
// holds it, the caller's query along on a GET; false once it has answered
// (the key gone from the catalog, no credential, the host unreachable).
// The caller closes the body.
func (rq *request) objectCall(ctx context.Context, o objects.Object, method, path string, body []byte, contentType string) (*http.Response, bool) {
	query := ""
	if method == http.MethodGet {
		query = rq.r.URL.RawQuery
	}
	resp, err := rq.sendObject(ctx, o, method, path, query, body, contentType)
	if err != nil {
		rq.fail(err)
		return nil, false
	}
	copyResponseHeaders(rq.w.Header(), resp.Header)
	return resp, true
}

// quietObjectCall is a GET of path for Relay's own sake: a failure is
// only left out.
func (rq *request) quietObjectCall(ctx context.Context, o objects.Object, path string) (*http.Response, bool) {
	resp, err := rq.sendObject(ctx, o, http.MethodGet, path, "", nil, "")
	return resp, err == nil
}

// sendObject sends the call; its error is the caller's answer.
func (rq *request) sendObject(ctx context.Context, o objects.Object, method, path, query string, body []byte, contentType string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	return rq.sendObjectBody(ctx, o, method, path, query, rd, int64(len(body)), body, contentType)
}

// sendObjectBody is sendObject with the body read from rd (size bytes)
// as it is sent; signed is the body an authorizer that signs it is given
// (nil: none).
func (rq *request) sendObjectBody(ctx context.Context, o objects.Object, method, path, query string, rd io.Reader, size int64, signed []byte, contentType string) (*http.Response, error) {
	host, key := rq.snap.Host(o.HostID), rq.snap.HostKey(o.HostKeyID)
	if host == nil || key == nil || !key.Usable {
		return nil, wire.Errorf(wire.ErrNotFound, "'%s' is held by a host key that is no longer in the catalog.", o.ID)
	}
	shape := wire.ShapeOpenAI
	if o.Kind == objects.KindMessageBatch {
		shape = wire.ShapeAnthropic
	}
	u := wire.JoinURL(host.BaseURL, path)
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, wire.Errorf(wire.ErrUpstream, "The host that holds '%s' has an invalid base URL.", o.ID)
	}
	if rd != nil {
		req.ContentLength = size
	}
	req.Header = appendOutboundHeaders(make(http.Header), rq.r.Header, shape, host)
	req.Header.Del("Content-Type")
	req.Header.Del("Content-Length")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if err := rq.h.authorizers.Authorize(ctx, req, signed, profile.Lookup(host.Profile), shape, host, key); err != nil {
		return nil, wire.Errorf(wire.ErrUpstream, "The host key that holds '%s' could not produce a credential.", o.ID)
	}
	rq.attempts++
	resp, err := rq.h.transport.RoundTrip(req)
	if err != nil {
		what, _ := describe(err, ctx)
		return nil, wire.Errorf(wire.ErrUpstream, "The host that holds '%s' could not be reached: %s.", o.ID, what)
	}
	rq.attempt.key = key
	return resp, nil
}

// objectAnswer reads an upstream object's answer, bounded, with the host
// key's secret (should an upstream echo it) redacted.
func (rq *request) objectAnswer(resp *http.Response, o objects.Object) []byte {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxEventBytes))
	if key := rq.snap.HostKey(o.HostKeyID); key != nil {
		if s := key.Secret.Reveal(); s != "" && bytes.Contains(body, []byte(s)) {
			body = bytes.ReplaceAll(body, []byte(s), []byte("[redacted]"))
		}
	}
	return body
}

// streamObject copies a file's content to the caller as it arrives.
func (rq *request) streamObject(resp *http.Response) {
	hd := rq.w.Header()
	rq.setRelayHeaders()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		hd.Set("Content-Type", ct)
	}
	if resp.ContentLength >= 0 {
		hd.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	rq.w.WriteHeader(resp.StatusCode)
	rq.status = resp.StatusCode
	rq.ttfb = time.Since(rq.start)
	if cap(rq.ioBuf) < 32<<10 {
		rq.ioBuf = make([]byte, 32<<10)
	}
	if _, err := io.CopyBuffer(rq.w, resp.Body, rq.ioBuf[:cap(rq.ioBuf)]); err != nil && rq.r.Context().Err() == nil {
		rq.abort = true // the caller must see a cut, not a complete file
	}
}

// listObjects answers one page of the caller's objects of a kind from the
// index, newest first or, with order=asc, oldest first: limit (1–max, 20 by
// default), after (an id), and for files purpose. Each is the object as the upstream last showed it
// (batches are refreshed first, batches.go).
func (rq *request) listObjects(ctx context.Context, kind objects.Kind, maxLimit int) {
	q := rq.r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "limit", Msg: "limit must be an integer from 1 to " + strconv.Itoa(maxLimit) + "."})
			return
		}
		limit = n
	}
	asc := false
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		asc = true
	default:
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "order", Msg: "order must be asc or desc."})
		return
	}
	purpose := q.Get("purpose")
	after := q.Get("after")
	var got []objects.Object
	more := false
	for len(got) < limit {
		page, m, err := rq.h.objects.List(ctx, rq.caller.ProjectID, kind, objects.Page{After: after, Limit: limit - len(got), Asc: asc})
		if err != nil {
			rq.indexFailed(err)
			return
		}
		for _, o := range page {
			if purpose == "" || o.Attrs[attrPurpose] == purpose {
				got = append(got, o)
			}
		}
		more = m
		if !m || len(page) == 0 {
			break
		}
		after = page[len(page)-1].ID
	}
	if kind == objects.KindBatch {
		rq.refreshBatches(ctx, got)
	}
	b := append(rq.out[:0], `{"object":"list","data":[`...)
	for i, o := range got {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, objectJSON(o)...)
	}
	b = append(b, `],"first_id":`...)
	if len(got) > 0 {
		b = wire.AppendString(b, got[0].ID)
		b = append(b, `,"last_id":`...)
		b = wire.AppendString(b, got[len(got)-1].ID)
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	rq.out = append(b, '}')
	rq.respond(http.StatusOK, "application/json", rq.out)
}

// objectJSON is the object as the upstream last showed it, or, for one
// Relay never saw whole, the least that says what it is.
func objectJSON(o objects.Object) []byte {
	if s := o.Attrs[attrObject]; s != "" && json.Valid([]byte(s)) {
		return []byte(s)
	}
	b := wire.AppendString([]byte(`{"id":`), o.ID)
	b = append(b, `,"object":"file","bytes":`...)
	b = strconv.AppendInt(b, o.Size, 10)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, o.CreatedAt.Unix(), 10)
	b = append(b, `,"filename":`...)
	b = wire.AppendString(b, o.Attrs[attrFilename])
	b = append(b, `,"purpose":`...)
	b = wire.AppendString(b, o.Attrs[attrPurpose])
	return append(b, `,"status":"processed"}`...)
}

// Index attributes of files and batches.
const (
	attrObject   = "object"   // the upstream's JSON of the object, as last seen
	attrPurpose  = "purpose"  // a file's
	attrFilename = "filename" // a file's
	attrEndpoint = "endpoint" // a batch input file's lines' url
	attrModel    = "model_id" // a batch input file's or batch's catalog model
	attrBinding  = "binding_id"
	attrEstIn    = "est_in"  // a batch input file's prompt token estimate
	attrEstOut   = "est_out" // and output token estimate
	attrLines    = "lines"
)

// maxObjectJSON bounds the object JSON kept in the index.
const maxObjectJSON = 4 << 10

// uploadForm is a file upload's form: its text fields in order and the
// file, whose bytes are in content or, for a form that spilled to disk
// (over formInMemory), in the spilled file of their own (file).
type uploadForm struct {
	fields      [][2]string
	filename    string
	contentType string
	content     []byte
	file        *spill.File
}

// maxUploadField bounds one text field of an upload form (purpose,
// expires_after[…]): only the file may be large.
const maxUploadField = 64 << 10

// readUploadForm reads a multipart upload from body. With spillFile, the
// file part goes to an unlinked temporary file of its own (package
// spill) rather than onto the heap; the caller closes it (close).
func readUploadForm(body io.Reader, boundary string, spillFile bool) (*uploadForm, error) {
	f := &uploadForm{}
	mr := multipart.NewReader(body, boundary)
	seen := map[string]bool{}
	haveFile := false
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.close()
			return nil, formError(strings.TrimPrefix(err.Error(), "multipart: "))
		}
		name := p.FormName()
		if name == "" {
			f.close()
			return nil, formError("a part has no name")
		}
		if seen[name] {
			f.close()
			return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: name, Msg: "The form gives the " + name + " field twice."}
		}
		seen[name] = true
		if name == "file" && spillFile {
			sp, err := spill.New("", nil, p)
			if err != nil {
				if errors.Is(err, spill.ErrDisk) {
					return nil, err
				}
				return nil, formError(strings.TrimPrefix(errors.Unwrap(err).Error(), "multipart: "))
			}
			f.filename, f.contentType, f.file, haveFile = p.FileName(), p.Header.Get("Content-Type"), sp, true
			continue
		}
		var rd io.Reader = p // the file, of a form within formInMemory
		if name != "file" {
			rd = io.LimitReader(p, maxUploadField+1)
		}
		b, err := io.ReadAll(rd)
		if err != nil {
			f.close()
			return nil, formError(strings.TrimPrefix(err.Error(), "multipart: "))
		}
		if name == "file" {
			f.filename, f.contentType, f.content, haveFile = p.FileName(), p.Header.Get("Content-Type"), b, true
			continue
		}
		if len(b) > maxUploadField {
			f.close()
			return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: name, Msg: "The form's " + name + " field is longer than 64 KiB."}
		}
		f.fields = append(f.fields, [2]string{name, string(b)})
	}
	switch {
	case !haveFile:
		f.close()
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "file", Msg: "Missing required parameter: 'file'."}
	case f.field("purpose") == "":
		f.close()
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "purpose", Msg: "Missing required parameter: 'purpose'."}
	}
	return f, nil
}

// close releases the spilled file, if any.
func (f *uploadForm) close() {
	if f.file != nil {
		_ = f.file.Close()
		f.file = nil
	}
}

func (f *uploadForm) field(name string) string {
	for _, kv := range f.fields {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}

// encode writes the form again, with the file's bytes last: the form's
// head (its fields and the file part's header) and tail in memory, the
// file between them from content or from its spilled file, read as the
// upstream request is sent. size is the whole body's length.
func (f *uploadForm) encode() (body io.Reader, size int64, contentType string) {
	var head bytes.Buffer
	w := multipart.NewWriter(&head)
	for _, kv := range f.fields {
		_ = w.WriteField(kv[0], kv[1])
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+strings.NewReplacer(`"`, "%22", "\r", "%0D", "\n", "%0A").Replace(f.filename)+`"`)
	h.Set("Content-Type", cmp.Or(f.contentType, "application/octet-stream"))
	_, _ = w.CreatePart(h)
	tail := "\r\n--" + w.Boundary() + "--\r\n"
	var file io.Reader = bytes.NewReader(f.content)
	n := int64(len(f.content))
	if f.file != nil {
		n = f.file.Size()
		file = f.file.Section(0, n)
	}
	size = int64(head.Len()) + n + int64(len(tail))
	return io.MultiReader(&head, file, strings.NewReader(tail)), size, w.FormDataContentType()
}

// uploadFile answers POST /v1/files.
func (rq *request) uploadFile(ctx context.Context) {
	boundary := formBoundary(rq.r.Header.Get("Content-Type"))
	if boundary == "" {
		rq.fail(wire.Errorf(wire.ErrMalformedRequest, "Upload a file as multipart/form-data with the fields file and purpose."))
		return
	}
	// Read as the other multipart forms are (readFormBody): a body over
	// formInMemory spills to disk, and so does its file part, so that an
	// upload holds about formInMemory of heap, not its size.
	if !rq.readFormBody() {
		return
	}
	var rd io.Reader = bytes.NewReader(rq.body.Bytes())
	if sp := rq.form.spilled; sp != nil {
		defer sp.Close()
		rd = sp.Section(0, sp.Size())
	}
	form, err := readUploadForm(rd, boundary, rq.form.spilled != nil)
	if err != nil {
		if errors.Is(err, spill.ErrDisk) {
			rq.h.log.Error("spilling an uploaded file", "request_id", rq.id, "err", err)
			err = wire.Errorf(wire.ErrUnavailable, "Relay could not hold the upload; try again.")
		}
		rq.fail(err)
		return
	}
	defer form.close()
	purpose := form.field("purpose")
	attrs := map[string]string{attrPurpose: purpose, attrFilename: form.filename}
	var home objectHome
	if purpose == "batch" {
		if form.file != nil {
			// A batch input file is rewritten line by line (each line's
			// model becomes its binding's): it is read whole, within the
			// body limit.
			form.content = form.file.Head(int(form.file.Size()))
			form.close()
		}
		plan, err := rq.planBatchInput(form.content)
		if err != nil {
			rq.fail(err)
			return
		}
		form.content = plan.content
		home = plan.home
		attrs[attrEndpoint], attrs[attrModel], attrs[attrBinding] = plan.endpoint, home.binding.ModelID.String(), home.binding.ID.String()
		attrs[attrEstIn], attrs[attrEstOut], attrs[attrLines] = strconv.FormatInt(plan.estIn, 10), strconv.FormatInt(plan.estOut, 10), strconv.Itoa(plan.lines)
	} else if home, err = rq.anyHome(); err != nil {
		rq.fail(err)
		return
	}
	body, size, ct := form.encode()
	o := objects.Object{Kind: objects.KindFile, ProjectID: rq.caller.ProjectID, HostID: home.host.ID, HostKeyID: home.key.ID, Attrs: attrs}
	o.ID = "(upload)"
	resp, err := rq.sendObjectBody(ctx, o, http.MethodPost, "/v1/files", "", body, size, nil, ct)
	if err != nil {
		rq.fail(err)
		return
	}
	copyResponseHeaders(rq.w.Header(), resp.Header)
	defer resp.Body.Close()
	answer := rq.objectAnswer(resp, o)
	if resp.StatusCode < 300 {
		var f struct {
			ID        string `json:"id"`
			Bytes     int64  `json:"bytes"`
			CreatedAt int64  `json:"created_at"`
		}
		if json.Unmarshal(answer, &f) != nil || f.ID == "" {
			rq.fail(wire.Errorf(wire.ErrUpstream, "The host answered the upload without a file id."))
			return
		}
		o.ID, o.Size, o.CreatedAt = f.ID, f.Bytes, time.Unix(f.CreatedAt, 0)
		if f.CreatedAt == 0 {
			o.CreatedAt = rq.at
		}
		if len(answer) <= maxObjectJSON {
			attrs[attrObject] = string(answer)
		}
		if err := rq.h.objects.Put(ctx, o); err != nil {
			// The upstream holds a file nobody can reach: say so rather
			// than hand out an id Relay cannot route.
			rq.indexFailed(err)
			return
		}
	}
	rq.respond(resp.StatusCode, "application/json", answer)
}

// objectHome is where a new object goes.
type objectHome struct {
	binding *snapshot.Binding
	host    *snapshot.Host
	key     *snapshot.HostKey
}

// homeFor is the first binding of m (of an OpenAI shape, enabled, on an
// enabled host) with a host key the caller's policy grants that is usable
// and not held by its breakers, and that key.
func (rq *request) homeFor(m *snapshot.Model) (objectHome, bool) {
	return rq.homeOf(m, func(s wire.Shape) bool { return s == wire.ShapeOpenAI || s == wire.ShapeOpenAIResponses })
}

// homeOf is homeFor for the bindings whose shape shaped accepts.
func (rq *request) homeOf(m *snapshot.Model, shaped func(wire.Shape) bool) (objectHome, bool) {
	p := rq.caller.Policy
	if p == nil {
		return objectHome{}, false
	}
	for _, b := range rq.snap.Bindings(m.ID) {
		if !b.Enabled || !shaped(b.Shape) {
			continue
		}
		h := rq.snap.Host(b.HostID)
		if h == nil || !h.Enabled || h.Profile != "" {
			continue
		}
		for _, k := range rq.snap.HostKeys(h.ID) {
			if k.Enabled && k.Usable && p.GrantsHostKey(k.ID) && rq.h.breakers.Ready(keypool.Ref(k), "", rq.at) {
				return objectHome{binding: b, host: h, key: k}, true
			}
		}
	}
	return objectHome{}, false
}

// anyHome is the home of a file that is not a batch's input.
func (rq *request) anyHome() (objectHome, error) {
	if p := rq.caller.Policy; p != nil {
		for _, m := range rq.snap.Models() {
			if p.GrantsModel(m.ID) {
				if home, ok := rq.homeFor(m); ok {
					return home, nil
				}
			}
		}
	}
	return objectHome{}, wire.Errorf(wire.ErrNoUsableHostKey, "No host key the policy grants can hold files right now: files go to an OpenAI host of a model the policy grants.")
}
