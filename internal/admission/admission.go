// Package admission is the seam between the proxy and the limiter: what the
// proxy tells the limiter of a request once it is routed (Admission), and
// what a limiter answers with (Limiter, KeyLimiter, Reservation and the
// optional RateHeaders and Degradable). internal/ratelimit implements it
// and internal/proxy calls it; neither imports the other, so the limiter
// links no part of the inference handler.
package admission

import (
	"context"
	"net/http"
	"time"

	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Limiter admits a request once it is routed, before the first host key is
// picked. internal/ratelimit implements it; the default admits all.
type Limiter interface {
	// Admit may wait (pacing) while ctx lives. It returns a func to call
	// once with the actual usage when the response has ended, or an error:
	// a *wire.Error of kind wire.ErrRateLimited (with RetryAfter) becomes a
	// 429, anything else a 503.
	Admit(ctx context.Context, a *Admission) (done func(wire.Usage), err error)
}

// Admission is what the limiter sees of a request. It is valid only
// during Admit (or Reserve).
type Admission struct {
	RequestID string
	Caller    *snapshot.Caller
	Model     *snapshot.Model
	Plan      *routing.Plan
	Inbound   wire.Inbound
	Stream    bool
	BodyBytes int
	// MaxTokens is the request's max_tokens (or max_completion_tokens,
	// max_output_tokens), 0 when it sets none.
	MaxTokens int64
	// Snapshot is the snapshot the request was routed with.
	Snapshot *snapshot.Snapshot
	// Header is the caller's request header (X-Relay-Priority).
	Header http.Header
	// Cached marks a response cache hit: it counts as a request against
	// the request limits and spends no tokens (BodyBytes and MaxTokens
	// are 0); nothing goes upstream.
	Cached bool
	// Degrade says the request has a cheaper fallback its policy may
	// degrade it to (docs/rate-limits.md#degrade-instead-of-wait): the
	// limiter lets it wait on this model only as long as the policy's
	// degrade option allows, then refuses it with a Degradable error
	// instead of letting it wait on.
	Degrade bool
	// Waited is how long the request already waited for the limiter
	// before it was degraded: its max wait is shortened by as much.
	Waited time.Duration
	// Batch is set for a batch (internal/proxy/batches.go), whose lines the request
	// stands for: at creation with their token totals, so that a batch
	// its budgets cannot cover is refused; when it has finished with zero
	// tokens, settled with its actual usage. A batch counts against the
	// caller's budgets only, at the batch price (pricing.BatchDivisor):
	// never against the policy's request, token and concurrency rules,
	// which pace interactive traffic (a provider runs batches apart).
	Batch *BatchTokens
	// Scopes, when not nil (even empty), make this the admission of something other than a
	// model call (an MCP tools/call, internal/mcpgw; see Scoped): one
	// request and no tokens, counted against each scope's rate limit
	// instead of the policy's own (the policy's rules pace its model
	// traffic), under counters of the scope's own, refused at once rather
	// than left to wait. The caller's budgets still apply.
	Scopes []Scope
	// Units are what the request is expected to use of what a binding
	// bills per unit (wire.Units: images as asked, audio seconds as
	// estimated from the upload's size): their cost at the binding's unit
	// prices (pricing.UnitCost) is reserved against the caller's budgets
	// on top of its tokens', and settled with what it used (UnitSettler).
	Units wire.Units
	// CallPrice is a fixed price of the call, in micro-units of currency,
	// counted against the caller's budgets on top of any binding's cost:
	// an MCP tool's price per call (snapshot.MCPServer.CallPrice),
	// reserved at admission and settled as it is.
	CallPrice int64
}

// Scope is one rate limit counted under counters of their own: the same
// rate limit in two scopes (two MCP servers, two tools of one) caps each
// apart. The counters are the policy's, per principal where a rule says
// so, like a policy's own.
type Scope struct {
	ID          snapshot.ID // names the counters (an MCP server's id, snapshot.MCPToolScope)
	RateLimitID snapshot.ID
}

// Scoped is the admission of one call of caller under scopes, with
// snapshot snap (Scopes).
func Scoped(caller *snapshot.Caller, snap *snapshot.Snapshot, scopes ...Scope) *Admission {
	if scopes == nil {
		scopes = []Scope{} // no rate limit of its own: its budgets only
	}
	return &Admission{Caller: caller, Snapshot: snap, Scopes: scopes, Header: http.Header{}}
}

// BatchTokens are a batch's token totals, taken as they are: no learned
// estimate lowers them, no model's max output caps them.
type BatchTokens struct {
	Input, Output int64
}

// Degradable is implemented by a limiter's refusal of a request the
// policy degrades rather than lets wait (Admission.Degrade): the proxy
// serves it by the cheaper fallback instead.
type Degradable interface {
	Degradable() bool
}

// KeyLimiter is a Limiter that also admits every upstream attempt with its
// host key, so that the host key's tier limit and pacing apply, retries
// included. The proxy calls Reserve instead of Admit, the Reservation's
// Attempt before each attempt, and Done once when the response has ended.
type KeyLimiter interface {
	Limiter
	// Reserve prepares a request's reservation. It does no I/O: the
	// first Attempt reserves the policy's limits together with the host
	// key's, in one round trip to the limiter's store.
	Reserve(a *Admission) (Reservation, error)
}

// Reservation is one request's claim on its limits.
type Reservation interface {
	// Attempt admits one upstream attempt through binding b with key. It
	// may wait (pacing) while ctx lives. Errors are as for Limiter.Admit.
	Attempt(ctx context.Context, key *snapshot.HostKey, b *snapshot.Binding) error
	// Done settles the reservation with the actual usage. It must not block.
	Done(wire.Usage)
}

// UnitSettler is implemented by a Reservation that counts what a request
// used per unit against budgets: the proxy settles through DoneUnits, with
// the request's usage and the units it used (zero for a request that did
// not succeed), instead of through Done.
type UnitSettler interface {
	DoneUnits(wire.Usage, wire.Units)
}

// RateHeaders is implemented by a Reservation that tells the caller its
// own remaining budget: the x-ratelimit-* headers of the caller's policy,
// set on the response after the upstream's headers (so they replace a
// shared host key's).
type RateHeaders interface {
	SetRateHeaders(http.Header)
}
