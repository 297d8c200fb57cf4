package mockupstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// Keys are the accepted upstream credentials. Empty accepts any non-empty
	// credential.
	Keys []string
	// Latency is added before the first byte of every response, errors included.
	Latency time.Duration
	// ChunkDelay is the pause between two stream events (0 = none).
	ChunkDelay time.Duration
	// Record is how many recent requests to keep: 0 keeps DefaultRecord, -1 keeps
	// none (for load tests; WaitFor then fails at once).
	Record int
	// PromptCache gives every credential a prompt cache: a request body that
	// begins with bytes the same credential sent before (in whole blocks of
	// 512 bytes) reports that share of its prompt as read from the cache, in
	// every shape's usage (prompt_tokens_details.cached_tokens,
	// cache_read_input_tokens, cachedContentTokenCount,
	// input_tokens_details.cached_tokens). Off, only the "cached" model
	// marker reports cache reads.
	PromptCache bool
	// FaultHeader names the header a fault spec is read from; empty is
	// X-Mock-Fault. Relay never forwards X-Mock-*, so a test that asks for a
	// fault through Relay names a header the host forwards instead.
	FaultHeader string
	// AWS are the access keys the Bedrock face (/model/{modelId}/…)
	// accepts; AWSRegion is the region it is in (DefaultAWSRegion when
	// empty): a signature scoped to another region or service is refused.
	AWS       []AWSCredential
	AWSRegion string
	// AWSClock is the clock SigV4 dates are checked against (five minutes
	// either way); nil is time.Now. Tests whose Relay runs on a fake clock
	// give the mock the same one.
	AWSClock func() time.Time
	// ToolsWhenAsked makes the model choose tools the way a sane model
	// would, for an agent on the demo catalog: it calls a tool only when
	// the last user turn asks for one (names a tool, or says "tool",
	// "function" or "command"), picks the tool it names, else a read-only
	// one (Read, Glob, Grep, LS, list_directory …), and never a sub-agent
	// launcher (Agent, Task) unless named. Off, a tool turn calls the first
	// tool offered, which translator tests rely on. tool_choice required or
	// forced is obeyed either way, and a tool result is always answered
	// with text.
	ToolsWhenAsked bool
	// FileDigests makes /v1/files keep of an uploaded file only its size
	// and its SHA-256, read as a stream, not its bytes (memory tests of
	// large uploads): its content then reads "sha256:<hex>".
	FileDigests bool
}

// DefaultRecord is how many requests a Server keeps when Options.Record is 0.
const DefaultRecord = 10000

// Shapes reported in Request.Shape.
const (
	ShapeOpenAI           = "openai"
	ShapeOpenAIResponses  = "openai_responses"
	ShapeOpenAIEmbeddings = "openai_embeddings"
	ShapeAnthropic        = "anthropic"
	ShapeGemini           = "gemini"
	ShapeGeminiEmbeddings = "gemini_embeddings"
)

// Request is one recorded request.
type Request struct {
	Method, Path, RawQuery string
	// Header is a copy of the request header as received.
	Header http.Header
	Body   []byte
	// Files is a multipart body's file parts (which Body does not keep):
	// each one's field, filename, size and SHA-256.
	Files []FormFile
	// Model is the model named in the body, or in the path for Gemini.
	Model string
	// Shape is one of the Shape constants; model listings and token counting
	// report their provider's main shape ("openai", "anthropic", "gemini").
	Shape  string
	Stream bool
	// Fault is the fault spec applied (e.g. "429-3", "reset"), "" if none.
	Fault      string
	ReceivedAt time.Time
	// FinishedAt is zero while the request is in flight.
	FinishedAt time.Time
	// Canceled reports that the client went away before the response was
	// complete; CanceledAt is when the server noticed.
	Canceled   bool
	CanceledAt time.Time
	// Status is the HTTP status sent, 0 if no response header was sent.
	Status int
}

// Finished reports whether the request has completed, failed or been canceled.
func (r Request) Finished() bool { return !r.FinishedAt.IsZero() }

// Server is the mock upstream. It implements http.Handler.
//
// # Faults
//
// A fault is chosen by a token "fault-<spec>" in the X-Mock-Fault header
// (where the "fault-" prefix is optional), else in the presented credential,
// else in the model name; the token must start the string or follow a
// non-alphanumeric character ("mock-fault-500", "sk-mock-fault-429-3"). Specs:
//
//	400…599     answer with that status and the provider's error body for it
//	            (401 authentication, 403 permission, 404 model not found,
//	            413 too large, 429 rate limit, 500 server error, 503
//	            unavailable, 504 timeout, 529 overloaded — Anthropic's
//	            overloaded_error; for other shapes status 529 with their
//	            overload body)
//	429-<s>     rate limited with Retry-After: <s> (default 1)
//	quota       OpenAI/Gemini 429 insufficient_quota / RESOURCE_EXHAUSTED,
//	            Anthropic 400 "credit balance is too low"; no Retry-After
//	slow[-<ms>] first byte after <ms> milliseconds (default 2000), then normal
//	stall[-<n>] stream: send n events (default 3), then nothing until the client
//	            leaves; non-stream: headers and half the body (nothing if n=0)
//	reset[-<n>] like stall, but abort the connection instead of waiting;
//	            reset-0 aborts before any byte
//	malformed[-<n>] 200 with invalid JSON: the first half of the body, or a
//	            broken SSE data line after n events (the stream then goes on)
//	midstream[-<n>] stream: after n events, the provider's in-stream error
//	            (OpenAI data {"error"}, Responses "error" event, Anthropic
//	            "event: error" overloaded_error, Gemini data {"error"}) and the
//	            stream ends; non-stream: 500
//
// Unknown specs are ignored. Except for slow, which delays every answer,
// authentication and request validation come first: a fault applies only to a
// request that would otherwise succeed (so with Options.Keys set, a faulting
// credential must be listed).
//
// # Replies and usage
//
// The reply is "Hello from <model>. You said: <first 40 characters of the last
// user text>" ("The tool returned: <first 40 characters>" after a tool result),
// cut at the earliest stop sequence, streamed one word per delta. When the
// request defines tools, tool choice is not none and the last message is a
// user turn, the model calls the forced tool or the first one instead (with
// Options.ToolsWhenAsked: only when the user asks, and the tool they mean), with
// arguments built from the schema's required properties; Claude-style, the
// Anthropic answer puts a short text block before its tool_use blocks.
//
// Prompt tokens are estimated as bytes/4 of all prompt text (system, messages,
// tool definitions) + 3 per message + 3, + 85 per image or file; output tokens
// are the words streamed (tool calls: 1 + argument fragments each). The output
// limit (max_tokens, max_completion_tokens, max_output_tokens,
// maxOutputTokens) truncates the text to that many words and reports
// length / max_tokens / incomplete / MAX_TOKENS; reasoning does not count
// against it.
//
// Usage switches on substrings of the lower-cased model name: "cached" reports
// half of the prompt as read from cache, "cache-write" half of the rest as
// written to cache, "reasoning" or "thinking" reports reasoning tokens (and
// emits an Anthropic thinking block and a Responses reasoning item); Anthropic
// thinking enabled/adaptive and Gemini includeThoughts turn reasoning on too
// and show it. "parallel" calls the first two tools at once (unless parallel
// tool calls are disabled). Each shape reports usage with its own semantics:
// OpenAI prompt tokens include cached ones and completion tokens include
// reasoning; Anthropic input_tokens exclude cache reads and writes and
// output_tokens include thinking; Gemini promptTokenCount includes
// cachedContentTokenCount and candidatesTokenCount excludes thoughtsTokenCount.
type Server struct {
	opts   Options
	keys   map[string]struct{}
	record int // ring capacity; 0 = recording off
	calls  sync.Pool
	cache  *promptCache // nil unless Options.PromptCache
	// awsKeys are Options.AWS by access key id.
	awsKeys map[string]AWSCredential
	// objects are the files, batches and message batches made through it
	// (files.go, messagebatches.go).
	objects objectStore

	mu      sync.Mutex // guards the fields below
	ring    []Request
	start   uint64        // sequence number of ring[0]'s first occupant since the last Reset
	next    uint64        // sequence number of the next recorded request
	size    int           // valid entries: sequence numbers [next-size, next)
	changed chan struct{} // closed when a request finishes; nil while nobody waits
}

// New returns a Server configured by opts.
func New(opts Options) *Server {
	s := &Server{opts: opts}
	if len(opts.Keys) > 0 {
		s.keys = make(map[string]struct{}, len(opts.Keys))
		for _, k := range opts.Keys {
			s.keys[k] = struct{}{}
		}
	}
	switch {
	case opts.Record == 0:
		s.record = DefaultRecord
	case opts.Record > 0:
		s.record = opts.Record
	}
	s.awsKeys = make(map[string]AWSCredential, len(opts.AWS))
	for _, k := range opts.AWS {
		s.awsKeys[k.AccessKeyID] = k
	}
	s.calls.New = func() any { return newCall() }
	if opts.PromptCache {
		s.cache = newPromptCache()
	}
	return s
}

// keyAccepted reports whether the credential may call the server.
func (s *Server) keyAccepted(key string) bool {
	if key == "" {
		return false
	}
	if s.keys == nil {
		return true
	}
	_, ok := s.keys[key]
	return ok
}

// insert records a request that has just been received and returns its
// sequence number.
func (s *Server) insert(r Request) uint64 {
	s.mu.Lock()
	seq := s.next
	s.next++
	idx := int((seq - s.start) % uint64(s.record))
	if idx == len(s.ring) {
		s.ring = append(s.ring, r)
	} else {
		s.ring[idx] = r
	}
	if s.size < s.record {
		s.size++
	}
	s.mu.Unlock()
	return seq
}

// complete stores the final state of request seq, if it is still kept, and
// wakes WaitFor callers.
func (s *Server) complete(seq uint64, r *Request) {
	s.mu.Lock()
	if seq >= s.start && seq >= s.next-uint64(s.size) {
		s.ring[int((seq-s.start)%uint64(s.record))] = *r
	}
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
}

// Requests returns a copy of the recorded requests, oldest first; requests in
// flight are included with a zero FinishedAt.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, 0, s.size)
	for seq := s.next - uint64(s.size); seq < s.next; seq++ {
		out = append(out, s.ring[int((seq-s.start)%uint64(s.record))])
	}
	return out
}

// Reset forgets every recorded request. Requests in flight finish unrecorded.
func (s *Server) Reset() {
	s.mu.Lock()
	clear(s.ring)
	s.ring = s.ring[:0]
	s.start = s.next
	s.size = 0
	s.mu.Unlock()
}

// ErrNotRecording is returned by WaitFor when Options.Record is -1.
var ErrNotRecording = errors.New("mockupstream: recording is off")

// WaitFor blocks until a recorded request satisfying match has finished
// (completed, failed or been canceled) or ctx ends, and returns the oldest
// such request. Requests that finished before the call count.
func (s *Server) WaitFor(ctx context.Context, match func(Request) bool) (Request, error) {
	if s.record == 0 {
		return Request{}, ErrNotRecording
	}
	for {
		s.mu.Lock()
		for seq := s.next - uint64(s.size); seq < s.next; seq++ {
			r := s.ring[int((seq-s.start)%uint64(s.record))]
			if r.Finished() && match(r) {
				s.mu.Unlock()
				return r, nil
			}
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("wait for request: %w", context.Cause(ctx))
		}
	}
}

// shutdownGrace bounds how long Serve waits for requests in flight once its
// context ends; stalled streams are then cut.
const shutdownGrace = 5 * time.Second

// Serve listens on addr and serves until ctx ends, then shuts down gracefully:
// it stops accepting, lets requests in flight finish for a few seconds, then
// cancels the rest (ending stalled streams) and closes. ready, if not nil, is
// called with the bound address once the listener is open (useful with port 0).
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		cancelBase()
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
