package mockupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody is the largest request body accepted (Anthropic's limit).
const maxBody = 32 << 20

// keepBuffer is the largest buffer a pooled call keeps between requests.
const keepBuffer = 1 << 20

type provider uint8

const (
	provOpenAI provider = iota
	provAnthropic
	provGemini
	provBedrock
)

type endpoint uint8

const (
	epUnknown endpoint = iota
	epChat
	epResponses
	epEmbeddings
	epOpenAIModels
	epMessages
	epCountTokens
	epAnthropicModels
	epGenerate // generateContent and streamGenerateContent
	epGeminiEmbed
	epGeminiBatchEmbed
	epGeminiCount
	epGeminiModels
	epConverse     // Bedrock Converse and ConverseStream
	epInvoke       // Bedrock InvokeModel[WithResponseStream] with an Anthropic body
	epBedrockEmbed // Bedrock InvokeModel of an embedding model (Titan, Cohere)
)

// framing is how stream events are written.
type framing uint8

const (
	frameData         framing = iota // "data: {…}\n\n" (OpenAI Chat, Gemini alt=sse)
	frameNamed                       // "event: x\ndata: {…}\n\n" (Anthropic, Responses)
	frameArray                       // elements of one JSON array (Gemini without alt=sse)
	frameEventStream                 // AWS event-stream messages, one per event (Bedrock ConverseStream)
	frameBedrockChunk                // AWS event-stream "chunk" messages carrying each event's JSON as base64 bytes (InvokeModelWithResponseStream)
)

// call is the state of one request. Calls are pooled; reset clears them.
type call struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	ctx     context.Context
	flusher http.Flusher

	ep        endpoint
	prov      provider
	model     string
	stream    bool
	cred      string
	fault     fault
	derr      *apiError // request validation failure, reported after auth
	conv      convo
	requestID string
	received  time.Time

	// Parsed bodies; only the one for ep is set.
	chat   *chatRequest
	resp   *responsesRequest
	emb    *embeddingsRequest
	anth   *anthropicRequest
	gem    *geminiRequest
	gembed *geminiEmbedRequest
	bembed *bedrockEmbedRequest

	recorded   bool
	seq        uint64
	rec        Request
	status     int
	canceled   bool
	canceledAt time.Time

	frame   framing
	events  int  // stream events written
	faulted bool // the stream fault has struck

	body  bytes.Buffer // request body when not recorded
	buf   bytes.Buffer // response encoding
	enc   *json.Encoder
	timer *time.Timer
}

func newCall() *call {
	c := &call{timer: time.NewTimer(time.Hour)}
	c.timer.Stop()
	c.enc = json.NewEncoder(&c.buf)
	c.enc.SetEscapeHTML(false)
	return c
}

// reset readies a pooled call for reuse.
func (c *call) reset() {
	body, buf, enc, timer := c.body, c.buf, c.enc, c.timer
	*c = call{}
	c.enc, c.timer = enc, timer
	if body.Cap() <= keepBuffer {
		c.body = body
		c.body.Reset()
	}
	if buf.Cap() <= keepBuffer {
		c.buf = buf
		c.buf.Reset()
	}
	// The encoder writes to c.buf, whose address is stable.
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveEndpoint(w, r) { // images, audio, … (endpoints.go)
		return
	}
	if s.serveMessageBatches(w, r) { // Anthropic's message batches (messagebatches.go)
		return
	}
	if s.serveObjects(w, r) { // files and batches (files.go)
		return
	}
	c := s.calls.Get().(*call)
	c.s, c.w, c.r, c.ctx = s, w, r, r.Context()
	c.received = time.Now()
	c.flusher, _ = w.(http.Flusher)
	defer s.finish(c) // runs on the http.ErrAbortHandler panic of a reset too
	c.serve()
}

// finish records the outcome of c and returns it to the pool.
func (s *Server) finish(c *call) {
	if c.recorded {
		c.rec.FinishedAt = time.Now()
		c.rec.Status = c.status
		c.rec.Canceled = c.canceled
		c.rec.CanceledAt = c.canceledAt
		s.complete(c.seq, &c.rec)
	}
	c.reset()
	s.calls.Put(c)
}

func (c *call) serve() {
	c.route()
	body, rerr := c.readBody()
	if rerr == nil {
		c.decode(body)
	}
	c.cred = c.credential()
	c.pickFault()
	if c.s.record > 0 {
		c.recordRequest(body)
	}
	if !c.pause(c.s.opts.Latency + c.slowDelay()) {
		return
	}
	switch {
	case rerr != nil:
		c.fail(rerr)
	case c.ep == epUnknown:
		c.fail(&apiError{kind: errNotFound, msg: c.unknownRouteMessage()})
	default:
		if e := c.authenticate(); e != nil {
			c.fail(e)
		} else if c.derr != nil {
			c.fail(c.derr)
		} else if e := c.faultError(); e != nil {
			c.fail(e)
		} else {
			c.respond()
		}
	}
}

// route picks the endpoint from the method and the path suffix, so any prefix
// (/v1, /openai/v1, /v1beta …) works.
func (c *call) route() {
	p, h := c.r.URL.Path, c.r.Header
	post := c.r.Method == http.MethodPost
	get := c.r.Method == http.MethodGet
	switch {
	case post && c.routeBedrock(c.r.URL.EscapedPath()):
	case strings.HasSuffix(p, "/chat/completions") && post:
		c.ep, c.prov = epChat, provOpenAI
	case strings.HasSuffix(p, "/responses") && post:
		c.ep, c.prov = epResponses, provOpenAI
	case strings.HasSuffix(p, "/embeddings") && post:
		c.ep, c.prov = epEmbeddings, provOpenAI
	case strings.HasSuffix(p, "/messages") && post:
		c.ep, c.prov = epMessages, provAnthropic
	case strings.HasSuffix(p, "/messages/count_tokens") && post:
		c.ep, c.prov = epCountTokens, provAnthropic
	case get && (strings.HasSuffix(p, "/models") || strings.Contains(p, "/models/")):
		// A listing, or one model: GET …/models/{id}.
		if i := strings.LastIndex(p, "/models/"); i >= 0 {
			c.model = p[i+len("/models/"):]
			if c.model == "" || strings.Contains(c.model, ":") {
				c.guessProvider()
				return
			}
		}
		switch {
		case strings.Contains(p, "/v1beta/") || h.Get("X-Goog-Api-Key") != "" || c.r.URL.Query().Has("key"):
			c.ep, c.prov = epGeminiModels, provGemini
		case h.Get("X-Api-Key") != "" || h.Get("Anthropic-Version") != "":
			c.ep, c.prov = epAnthropicModels, provAnthropic
		default:
			c.ep, c.prov = epOpenAIModels, provOpenAI
		}
	default:
		c.routeGemini(p, post)
	}
}

// routeGemini recognises …/models/{model}:{action}.
func (c *call) routeGemini(p string, post bool) {
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		c.guessProvider()
		return
	}
	model, action, ok := strings.Cut(p[i+len("/models/"):], ":")
	if !ok || !post {
		c.guessProvider()
		return
	}
	c.prov, c.model = provGemini, model
	switch action {
	case "generateContent":
		c.ep = epGenerate
	case "streamGenerateContent":
		c.ep, c.stream = epGenerate, true
	case "embedContent":
		c.ep = epGeminiEmbed
	case "batchEmbedContents":
		c.ep = epGeminiBatchEmbed
	case "countTokens":
		c.ep = epGeminiCount
	}
}

// guessProvider picks the error shape for an unknown route from the headers.
func (c *call) guessProvider() {
	h := c.r.Header
	switch {
	case h.Get("X-Api-Key") != "" || h.Get("Anthropic-Version") != "":
		c.prov = provAnthropic
	case h.Get("X-Goog-Api-Key") != "":
		c.prov = provGemini
	default:
		c.prov = provOpenAI
	}
}

// shape is the Request.Shape of the endpoint.
func (c *call) shape() string {
	switch c.ep {
	case epChat, epOpenAIModels:
		return ShapeOpenAI
	case epResponses:
		return ShapeOpenAIResponses
	case epEmbeddings:
		return ShapeOpenAIEmbeddings
	case epMessages, epCountTokens, epAnthropicModels:
		return ShapeAnthropic
	case epGenerate, epGeminiCount, epGeminiModels:
		return ShapeGemini
	case epGeminiEmbed, epGeminiBatchEmbed:
		return ShapeGeminiEmbeddings
	case epConverse:
		return ShapeBedrockConverse
	case epInvoke:
		return ShapeBedrockInvoke
	case epBedrockEmbed:
		return ShapeBedrockEmbeddings
	}
	return ""
}

func (c *call) readBody() ([]byte, *apiError) {
	if c.r.Body == nil || c.r.Method == http.MethodGet {
		return nil, nil
	}
	if c.r.ContentLength > maxBody {
		return nil, &apiError{kind: errTooLarge}
	}
	if c.r.ContentLength > 0 {
		c.body.Grow(int(c.r.ContentLength))
	}
	_, err := c.body.ReadFrom(io.LimitReader(c.r.Body, maxBody+1))
	if c.body.Len() > maxBody {
		return nil, &apiError{kind: errTooLarge}
	}
	if err != nil {
		return nil, &apiError{kind: errInvalid, msg: "could not read the request body"}
	}
	return c.body.Bytes(), nil
}

// decode parses the body for the endpoint; a validation failure is kept in
// c.derr and reported once the caller is authenticated.
func (c *call) decode(body []byte) {
	c.conv.whenAsked = c.s.opts.ToolsWhenAsked
	switch c.ep {
	case epChat:
		c.chat, c.derr = decodeChat(body, &c.conv)
		c.model, c.stream = c.chat.Model, c.chat.Stream
	case epResponses:
		c.resp, c.derr = decodeResponses(body, &c.conv)
		c.model, c.stream = c.resp.Model, c.resp.Stream
	case epEmbeddings:
		c.emb, c.derr = decodeEmbeddings(body)
		c.model = c.emb.Model
	case epMessages:
		c.anth, c.derr = decodeAnthropic(body, &c.conv, false, c.r.Header.Get("Anthropic-Beta") != "")
		c.model, c.stream = c.anth.Model, c.anth.Stream
	case epCountTokens:
		c.anth, c.derr = decodeAnthropic(body, &c.conv, true, c.r.Header.Get("Anthropic-Beta") != "")
		c.model = c.anth.Model
	case epGenerate, epGeminiCount:
		c.gem, c.derr = decodeGemini(body, &c.conv, c.ep == epGeminiCount)
		c.conv.model = c.model
	case epGeminiEmbed, epGeminiBatchEmbed:
		c.gembed, c.derr = decodeGeminiEmbed(body, c.model, c.ep == epGeminiBatchEmbed)
	case epConverse:
		c.derr = decodeConverse(body, &c.conv)
		c.conv.model = c.model
	case epInvoke:
		c.decodeInvoke(body)
	case epBedrockEmbed:
		c.bembed, c.derr = decodeBedrockEmbed(body, c.model, c.stream)
	}
}

// credential is the key presented in the provider's own way.
func (c *call) credential() string {
	h := c.r.Header
	switch c.prov {
	case provAnthropic:
		// x-api-key is the classic header; current SDKs send the key as a
		// bearer token, which the API accepts too.
		if k := h.Get("X-Api-Key"); k != "" {
			return k
		}
		return bearer(h)
	case provBedrock:
		// The access key id, for fault tokens; the signature is checked
		// in authenticateBedrock.
		if a, ok := parseSigV4(h.Get("Authorization")); ok {
			return a.keyID
		}
		return ""
	case provGemini:
		if k := h.Get("X-Goog-Api-Key"); k != "" {
			return k
		}
		if c.r.URL.RawQuery != "" {
			return c.r.URL.Query().Get("key")
		}
		return ""
	default:
		return bearer(h)
	}
}

func bearer(h http.Header) string {
	a := h.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// pickFault looks for a fault in the fault header (X-Mock-Fault, or
// Options.FaultHeader), the credential and the model name, in that order.
func (c *call) pickFault() {
	name := "X-Mock-Fault"
	if c.s.opts.FaultHeader != "" {
		name = c.s.opts.FaultHeader
	}
	if v := c.r.Header.Get(name); v != "" {
		if f, ok := parseFaultSpec(strings.TrimPrefix(v, faultToken)); ok {
			c.fault = f
			return
		}
	}
	if f, ok := findFault(c.cred); ok {
		c.fault = f
		return
	}
	if f, ok := findFault(c.model); ok {
		c.fault = f
	}
}

func (c *call) slowDelay() time.Duration {
	if c.fault.kind == faultSlow {
		return c.fault.delay
	}
	return 0
}

func (c *call) recordRequest(body []byte) {
	c.recorded = true
	c.rec = Request{
		Method:     c.r.Method,
		Path:       c.r.URL.Path,
		RawQuery:   c.r.URL.RawQuery,
		Header:     c.r.Header.Clone(),
		Body:       bytes.Clone(body),
		Model:      c.model,
		Shape:      c.shape(),
		Stream:     c.stream,
		Fault:      c.fault.spec,
		ReceivedAt: c.received,
	}
	c.seq = c.s.insert(c.rec)
}

// faultError is the error a status fault answers with, if any.
func (c *call) faultError() *apiError {
	switch f := c.fault; f.kind {
	case faultStatus:
		return &apiError{status: f.status, kind: kindForStatus(f.status), retryAfter: f.retryAfter}
	case faultQuota:
		return &apiError{kind: errQuota}
	case faultMidstream:
		if !c.stream {
			return &apiError{status: http.StatusInternalServerError, kind: errServer}
		}
	}
	return nil
}

func (c *call) respond() {
	if c.s.cache != nil {
		switch c.ep {
		case epChat, epResponses, epMessages, epGenerate:
			body := c.body.Bytes()
			c.conv.cachedBytes, c.conv.bodyBytes = c.s.cache.read(c.cred, body), len(body)
		}
	}
	switch c.ep {
	case epChat:
		c.serveChat()
	case epResponses:
		c.serveResponses()
	case epEmbeddings:
		c.serveEmbeddings()
	case epOpenAIModels:
		c.serveOpenAIModels()
	case epMessages:
		c.serveMessages()
	case epCountTokens:
		c.writeJSON(anthropicTokenCount{InputTokens: c.conv.promptTokens()})
	case epAnthropicModels:
		c.serveAnthropicModels()
	case epGenerate:
		c.serveGenerate()
	case epGeminiEmbed, epGeminiBatchEmbed:
		c.serveGeminiEmbed()
	case epGeminiCount:
		n := c.conv.promptTokens()
		c.writeJSON(geminiTokenCount{TotalTokens: n, PromptTokensDetails: []geminiModalityCount{{Modality: "TEXT", TokenCount: n}}})
	case epGeminiModels:
		c.serveGeminiModels()
	case epConverse:
		c.serveConverse()
	case epInvoke:
		c.serveMessages()
	case epBedrockEmbed:
		c.serveBedrockEmbed()
	}
}

// --- timing and cancellation ---

func (c *call) markCanceled() {
	if !c.canceled {
		c.canceled, c.canceledAt = true, time.Now()
	}
}

// alive reports whether the client is still there.
func (c *call) alive() bool {
	select {
	case <-c.ctx.Done():
		c.markCanceled()
		return false
	default:
		return true
	}
}

// pause waits d, or until the client leaves (then false).
func (c *call) pause(d time.Duration) bool {
	if d <= 0 {
		return c.alive()
	}
	c.timer.Reset(d)
	select {
	case <-c.ctx.Done():
		c.timer.Stop()
		c.markCanceled()
		return false
	case <-c.timer.C:
		return true
	}
}

// hang keeps the connection open, sending nothing, until the client leaves.
func (c *call) hang() {
	<-c.ctx.Done()
	c.markCanceled()
}

// --- writing ---

func (c *call) jsonContentType() string {
	if c.prov == provGemini {
		return "application/json; charset=UTF-8"
	}
	return "application/json"
}

// writeHeader sets the provider's response headers and sends the status.
// length < 0 means unknown (streamed).
func (c *call) writeHeader(status int, contentType string, length int) {
	h := c.w.Header()
	h["Content-Type"] = []string{contentType}
	if length >= 0 {
		h["Content-Length"] = []string{strconv.Itoa(length)}
	}
	switch c.prov {
	case provOpenAI:
		c.openAIHeaders(h, status)
	case provAnthropic:
		c.anthropicHeaders(h, status)
	case provBedrock:
		c.bedrockHeaders(h)
	case provGemini:
		h["Vary"] = []string{"Origin", "X-Origin", "Referer"}
		h["Server-Timing"] = []string{"gfet4t7; dur=" + strconv.FormatInt(time.Since(c.received).Milliseconds(), 10)}
	}
	c.w.WriteHeader(status)
	c.status = status
}

func (c *call) write(p []byte) bool {
	if _, err := c.w.Write(p); err != nil {
		c.markCanceled()
		return false
	}
	return true
}

func (c *call) flush() {
	if c.flusher != nil {
		c.flusher.Flush()
	}
}

// encode leaves the JSON of v, newline-terminated, in c.buf after prefix.
func (c *call) encode(prefix string, v any) {
	c.buf.Reset()
	c.buf.WriteString(prefix)
	if err := c.enc.Encode(v); err != nil {
		// Only hand-written structs are encoded; this cannot happen.
		panic("mockupstream: encode response: " + err.Error())
	}
}

// writeJSON sends a 200 JSON body, applying body faults.
func (c *call) writeJSON(v any) {
	c.encode("", v)
	body := c.buf.Bytes()
	ct := c.jsonContentType()
	switch c.fault.kind {
	case faultMalformed:
		half := body[:len(body)/2]
		c.writeHeader(http.StatusOK, ct, len(half))
		c.write(half)
	case faultStall, faultReset:
		if c.fault.events() > 0 {
			c.writeHeader(http.StatusOK, ct, len(body))
			c.write(body[:len(body)/2])
			c.flush()
		}
		if c.fault.kind == faultReset {
			panic(http.ErrAbortHandler)
		}
		c.hang()
	default:
		c.writeHeader(http.StatusOK, ct, len(body))
		c.write(body)
	}
}

// beginStream sends the stream's headers. Stall and reset faults with a zero
// count strike before any byte.
func (c *call) beginStream(contentType string, f framing) bool {
	if c.ep == epInvoke {
		contentType, f = eventStreamContentType, frameBedrockChunk
	}
	c.frame = f
	if c.fault.streaming() && c.fault.events() == 0 {
		switch c.fault.kind {
		case faultStall:
			c.faulted = true
			c.hang()
			return false
		case faultReset:
			panic(http.ErrAbortHandler)
		}
	}
	if !c.alive() {
		return false
	}
	h := c.w.Header()
	h["Cache-Control"] = []string{"no-cache"}
	c.writeHeader(http.StatusOK, contentType, -1)
	c.flush()
	return true
}

// before runs ahead of each stream event: the chunk delay, the client check
// and the stream fault. false means stop sending.
func (c *call) before() bool {
	if c.events > 0 && c.s.opts.ChunkDelay > 0 {
		if !c.pause(c.s.opts.ChunkDelay) {
			return false
		}
	} else if !c.alive() {
		return false
	}
	if c.faulted || !c.fault.streaming() || c.events != c.fault.events() {
		return true
	}
	c.faulted = true
	switch c.fault.kind {
	case faultStall:
		c.hang()
		return false
	case faultReset:
		panic(http.ErrAbortHandler)
	case faultMalformed:
		return c.writeMalformed()
	case faultMidstream:
		c.writeStreamError()
		return false
	}
	return true
}

// send writes one stream event (name is used by named framing only).
func (c *call) send(name string, v any) bool {
	if !c.before() {
		return false
	}
	switch c.frame {
	case frameNamed:
		c.encode("event: "+name+"\ndata: ", v)
		c.buf.WriteByte('\n')
	case frameData:
		c.encode("data: ", v)
		c.buf.WriteByte('\n')
	case frameArray:
		if c.events == 0 {
			c.encode("[", v)
		} else {
			c.encode(",\r\n", v)
		}
	case frameEventStream, frameBedrockChunk:
		c.encode("", v)
		payload := bytes.Clone(bytes.TrimSuffix(c.buf.Bytes(), []byte("\n")))
		if c.frame == frameBedrockChunk {
			payload, name = chunk(payload), "chunk"
		}
		c.buf.Reset()
		eventMessage(&c.buf, name, payload, false)
	}
	return c.emit()
}

// sendRaw writes a preformatted stream event, such as "data: [DONE]\n\n".
func (c *call) sendRaw(p string) bool {
	if !c.before() {
		return false
	}
	c.buf.Reset()
	c.buf.WriteString(p)
	return c.emit()
}

func (c *call) emit() bool {
	if !c.write(c.buf.Bytes()) {
		return false
	}
	c.flush()
	c.events++
	return true
}

// endStream closes a JSON-array stream.
func (c *call) endStream() {
	if c.frame == frameArray && c.events > 0 && c.alive() {
		c.write([]byte("]"))
	}
}

// writeMalformed writes an event whose data is not valid JSON; the stream then
// goes on.
func (c *call) writeMalformed() bool {
	c.buf.Reset()
	switch c.frame {
	case frameNamed:
		name := "content_block_delta"
		if c.ep == epResponses {
			name = "response.output_text.delta"
		}
		c.buf.WriteString("event: " + name + "\ndata: {\"type\":\"" + name + "\",\"index\":0,\"delta\":{\"type\n\n")
	case frameData:
		c.buf.WriteString("data: {\"id\":\"broken\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"\n\n")
	case frameArray:
		if c.events == 0 {
			c.buf.WriteByte('[')
		} else {
			c.buf.WriteString(",\r\n")
		}
		c.buf.WriteString("{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \n")
	case frameEventStream, frameBedrockChunk:
		eventMessage(&c.buf, "contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":`), false)
	}
	return c.emit()
}

// writeStreamError writes the provider's in-stream error; the stream ends.
func (c *call) writeStreamError() {
	e := &apiError{status: http.StatusServiceUnavailable, kind: errOverloaded}
	switch c.ep {
	case epChat:
		c.encode("data: ", c.openAIErrorBody(e))
		c.buf.WriteByte('\n')
	case epResponses:
		c.encode("event: error\ndata: ", responsesErrorEvent{
			Type: "error", Code: "server_error", Message: c.errorMessage(e), SequenceNumber: c.events,
		})
		c.buf.WriteByte('\n')
	case epMessages:
		c.encode("event: error\ndata: ", c.anthropicErrorBody(e))
		c.buf.WriteByte('\n')
	case epConverse, epInvoke:
		c.buf.Reset()
		eventMessage(&c.buf, "serviceUnavailableException", []byte(`{"message":"Bedrock is unable to process your request."}`), true)
	case epGenerate:
		body := c.geminiErrorBody(e)
		switch {
		case c.frame == frameData:
			c.encode("data: ", body)
			c.buf.WriteByte('\n')
		case c.events == 0:
			c.encode("[", body)
			c.buf.WriteByte(']')
		default:
			c.encode(",\r\n", body)
			c.buf.WriteByte(']')
		}
	}
	if c.write(c.buf.Bytes()) {
		c.flush()
	}
}

// fail answers with an error in the provider's shape.
func (c *call) fail(e *apiError) {
	if c.prov == provBedrock {
		c.failBedrock(e)
		return
	}
	status := c.errorStatus(e)
	var body any
	switch c.prov {
	case provAnthropic:
		body = c.anthropicErrorBody(e)
	case provGemini:
		body = c.geminiErrorBody(e)
	default:
		body = c.openAIErrorBody(e)
	}
	if e.kind == errRateLimit {
		c.w.Header()["Retry-After"] = []string{strconv.Itoa(max(e.retryAfter, 1))}
	}
	c.encode("", body)
	c.writeHeader(status, c.jsonContentType(), c.buf.Len())
	c.write(c.buf.Bytes())
}
