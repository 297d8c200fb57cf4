// Package event holds what the inference plane hands the rest of Relay when
// a request ends: the usage Record the ledger prices and stores, and the
// captured Payload. It is a leaf: the proxy produces these values, the usage
// and capture writers consume them, and neither side needs the other's
// package to do so (the control plane links the ledger, never the proxy).
package event

import (
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Record is one request as the usage ledger sees it. Identifiers are
// uuid.Nil where they do not apply.
type Record struct {
	RequestID       string    // Relay's own (X-Relay-Request-ID): the event's identity
	ClientRequestID string    // the caller's X-Request-ID when sane, else ""
	At              time.Time // arrival, on Config.Now's clock

	CredentialKind   snapshot.CredentialKind
	CredentialID     snapshot.ID // relay key or inference token
	ProjectID        snapshot.ID
	TeamID           snapshot.ID
	ServiceAccountID snapshot.ID
	UserID           snapshot.ID
	PolicyID         snapshot.ID

	Model     string // the catalog name; the caller's text when unresolved
	ModelID   snapshot.ID
	BindingID snapshot.ID
	HostID    snapshot.ID
	HostSlug  string
	HostKeyID snapshot.ID // the key of the last attempt

	// Route is the routing decision as the X-Relay-Route header says it
	// (binding, key slot, strategy, affinity hit or miss); "" when the
	// request was refused before routing.
	Route string
	// RouteDetail is the decision in full for the ledger: a JSON object
	// with the candidates, their scores and why each was skipped; nil when
	// the request was refused before routing.
	RouteDetail []byte

	Inbound  string     // wire.Inbound.String(), or "batch" / "message_batch"
	Upstream wire.Shape // the binding's shape
	Stream   bool
	// Batch marks a finished batch's usage (all its lines in one
	// record, RequestID the batch's id): priced at the batch price,
	// pricing.BatchDivisor times cheaper than the binding's.
	Batch bool

	Status    int    // sent to the caller; 499 when the caller went away
	ErrorKind string // "" on success, else an error code (docs/errors.md)
	Attempts  int
	Usage     wire.Usage
	// Units are what a binding with unit prices bills (images, seconds
	// of audio): priced by pricing.UnitCost on top of the tokens.
	Units wire.Units

	TimeToFirstByte time.Duration // arrival to the first byte sent to the caller
	Total           time.Duration // arrival to the end of the response
	Overhead        time.Duration // Relay's own time before the first upstream attempt

	// Cache is what the response cache did: "hit", "miss", "bypass", or
	// "" when it is off for the request.
	Cache string
	// On a hit: CacheAge is the entry's age, CacheSaved the usage the
	// answer cost when it was produced (Usage is zero: nothing went
	// upstream) and CacheBindingID the binding that produced it, whose
	// pricing says what the hit saved.
	CacheAge       time.Duration
	CacheSaved     wire.Usage
	CacheBindingID snapshot.ID
	// CacheSavedCost is CacheSaved priced at that binding's pricing when
	// the hit was served, in nano-units of currency: what the hit saved.
	CacheSavedCost int64
	// A semantic hit's domain, the entry that answered (the request id
	// that produced it) and its cosine similarity to the request; "" and
	// 0 for an exact hit.
	CacheDomain     string
	CacheEntry      string
	CacheSimilarity float64

	// Guardrails are what the policy's guardrails did, one entry per
	// (stage, rule, kind, action, failure) with its count — never the
	// matched text.
	Guardrails []Guardrail

	// MCPServer and MCPTool name the MCP server and the tool (as the
	// server names it) of a tools/call through /mcp (docs/mcp.md); ""
	// for model calls. The ledger keeps them as the event's host slug and
	// model ("<server>__<tool>"), with inbound shape "mcp".
	MCPServer string
	MCPTool   string
	// CallPrice is what the call cost at a fixed price, in micro-units of
	// currency: an admitted tools/call's server's price per call
	// (snapshot.MCPServer.CallPrice). The ledger adds it to the event's
	// cost, as the budgets counted it.
	CallPrice int64
}

// Error kinds a Record carries besides the codes of docs/errors.md.
const (
	KindClientCanceled      = "client_canceled"
	KindUpstreamClientError = "upstream_client_error"
	KindStreamError         = wire.StreamErrorCode
)

// Payload is one captured request. Identifiers are uuid.Nil where they do
// not apply.
type Payload struct {
	RequestID        string // Relay's own (X-Relay-Request-ID): the capture's address
	ClientRequestID  string // the caller's X-Request-ID when sane, else ""
	At               time.Time
	ProjectID        snapshot.ID
	RelayKeyID       snapshot.ID
	InferenceTokenID snapshot.ID
	PolicyID         snapshot.ID
	Model            string
	Status           int
	Request          []byte // as the caller sent it, up to the cap
	Response         []byte // as Relay sent it, up to the cap
	Truncated        bool   // either body was cut at the cap
}

// Guardrail is one kind of action a guardrail took on a request.
type Guardrail struct {
	Stage  string // "input" or "output"
	Rule   string
	Kind   string // the detector, "webhook" or "deny"
	Action string // "block", "redact" or "log"
	// Failure is why a webhook rule's call failed ("timeout", "busy" …).
	Failure string
	N       int
}
