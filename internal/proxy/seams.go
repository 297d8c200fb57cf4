package proxy

import (
	"context"
	"time"

	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Limiter admits a request once it is routed, before the first host key is
// picked. The rate-limit issue implements it; the default admits all.
type Limiter interface {
	// Admit may wait (pacing) while ctx lives. It returns a func to call
	// once with the actual usage when the response has ended, or an error:
	// a *wire.Error of kind wire.ErrRateLimited (with RetryAfter) becomes a
	// 429, anything else a 503.
	Admit(ctx context.Context, a *Admission) (done func(wire.Usage), err error)
}

// Admission is what the limiter sees of a request. It is valid only
// during Admit.
type Admission struct {
	RequestID string
	Caller    *snapshot.Caller
	Model     *snapshot.Model
	Plan      *routing.Plan
	Inbound   wire.Inbound
	Stream    bool
	BodyBytes int
}

type nopLimiter struct{}

func (nopLimiter) Admit(context.Context, *Admission) (func(wire.Usage), error) { return nil, nil }

// Recorder receives one Record per authenticated request, after its
// response has ended. Record must not block: an implementation hands the
// record to a bounded queue and drops (and counts) when it is full.
type Recorder interface {
	Record(Record)
}

type nopRecorder struct{}

func (nopRecorder) Record(Record) {}

// Record is one request as the usage ledger sees it. Identifiers are
// uuid.Nil where they do not apply.
type Record struct {
	RequestID string
	At        time.Time // arrival, on Config.Now's clock

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

	Inbound  string         // wire.Inbound.String()
	Upstream snapshot.Shape // the binding's shape
	Stream   bool

	Status    int    // sent to the caller; 499 when the caller went away
	ErrorKind string // "" on success, else an error code (docs/errors.md)
	Attempts  int
	Usage     wire.Usage

	TimeToFirstByte time.Duration // arrival to the first byte sent to the caller
	Total           time.Duration // arrival to the end of the response
	Overhead        time.Duration // Relay's own time before the first upstream attempt
}

// Error kinds a Record carries besides the codes of docs/errors.md.
const (
	KindClientCanceled      = "client_canceled"
	KindUpstreamClientError = "upstream_client_error"
	KindStreamError         = wire.StreamErrorCode
)
