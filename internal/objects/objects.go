package objects

import (
	"context"
	"errors"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Kind is what an upstream object is.
type Kind string

// Kinds of upstream object.
const (
	KindFile         Kind = "file"
	KindBatch        Kind = "batch"
	KindMessageBatch Kind = "message_batch"
	KindResponse     Kind = "response"
)

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool {
	switch k {
	case KindFile, KindBatch, KindMessageBatch, KindResponse:
		return true
	}
	return false
}

// Object is one index entry.
type Object struct {
	// ID is the upstream's id, as the caller sees it.
	ID        string      `json:"id"`
	Kind      Kind        `json:"kind"`
	ProjectID snapshot.ID `json:"project_id"`
	HostID    snapshot.ID `json:"host_id"`
	HostKeyID snapshot.ID `json:"host_key_id"`
	CreatedAt time.Time   `json:"created_at"`
	// Size is the object's size in bytes where it has one (a file), else 0.
	Size int64 `json:"size,omitempty"`
	// Attrs holds what a kind's routes need to remember beyond the above
	// (a batch's model and binding, a file's purpose); small values only.
	Attrs map[string]string `json:"attrs,omitempty"`
	// State is the last state Relay saw of the object upstream; nil when
	// it has seen none (or the kind has none).
	State *State `json:"state,omitempty"`
}

// ErrNotFound is the answer for an id the project does not own, whether
// or not it exists for another project.
var ErrNotFound = errors.New("object not found")

// ErrInvalid is the answer for an object Put cannot index (no id, an
// unknown kind, no project or host key).
var ErrInvalid = errors.New("invalid object")

// Page asks for part of a project's list of one kind, newest first
// unless Asc.
type Page struct {
	// After is the id of the last object of the previous page; "" starts
	// at the newest (the oldest when Asc).
	After string
	// Asc lists oldest first, as OpenAI's order=asc.
	Asc bool
	// Limit is the most objects to return; 0 or less means DefaultLimit,
	// and it is capped at MaxLimit.
	Limit int
}

// List limits.
const (
	DefaultLimit = 20
	MaxLimit     = 10000
)

func (p Page) limit() int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}

// Index is the shared index of upstream objects.
type Index interface {
	// Put indexes o (replacing an entry of the same project, kind and id)
	// and starts its retention anew.
	Put(ctx context.Context, o Object) error
	// Get returns the project's object of that kind and id, or ErrNotFound.
	Get(ctx context.Context, project snapshot.ID, kind Kind, id string) (Object, error)
	// List returns a page of the project's objects of one kind, newest
	// first (oldest first when p.Asc), and whether more follow.
	List(ctx context.Context, project snapshot.ID, kind Kind, p Page) ([]Object, bool, error)
	// Delete forgets the project's object; ErrNotFound when it had none.
	Delete(ctx context.Context, project snapshot.ID, kind Kind, id string) error
	// Claim marks the project's object with mark once: the first call for
	// (object, mark) reports true, every later one (from any pod) false.
	// It is how exactly one pod records a completed batch's usage. A
	// missing object reports ErrNotFound.
	Claim(ctx context.Context, project snapshot.ID, kind Kind, id, mark string) (bool, error)

	// Watch puts the object on the pending list (batches not yet
	// metered), due at at; a second Watch moves its due time.
	Watch(ctx context.Context, p Pending, at time.Time) error
	// Due returns up to limit pending entries due by now, oldest due
	// first, and moves each to now+lease, so that another pod's sweep
	// does not take it while this one looks.
	Due(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Pending, error)
	// Unwatch takes the object off the pending list (metered or
	// forgotten); Delete does too. Unwatching what is not there is no
	// error.
	Unwatch(ctx context.Context, p Pending) error
}

// Pending names an object on the pending list: a batch or message batch
// whose usage is not yet in the ledger.
type Pending struct {
	ProjectID snapshot.ID
	Kind      Kind
	ID        string
}

// Options bound an index's retention.
type Options struct {
	// Retention is how long an entry is kept after its last Put; 0 means
	// DefaultRetention.
	Retention time.Duration
	// MaxPerKind is the most entries a project keeps of one kind; 0 means
	// DefaultMaxPerKind. Past it the oldest are forgotten.
	MaxPerKind int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Retention defaults: the 30 days OpenAI keeps a batch's files, and a
// count that bounds a project's share of memory.
const (
	DefaultRetention  = 30 * 24 * time.Hour
	DefaultMaxPerKind = 10000
)

func (o Options) withDefaults() Options {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxPerKind <= 0 {
		o.MaxPerKind = DefaultMaxPerKind
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func check(o *Object) error {
	if o.ID == "" || len(o.ID) > 256 || !o.Kind.Valid() || o.ProjectID == (snapshot.ID{}) || o.HostKeyID == (snapshot.ID{}) {
		return ErrInvalid
	}
	return nil
}
