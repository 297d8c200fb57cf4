// Package nullable holds the three-state field of the control API's update
// (PATCH) requests: a field that is absent leaves the stored value alone, an
// explicit JSON null clears it, and a value sets it. A plain pointer cannot
// tell absent from null, so the generated request types use these instead for
// every column that may be NULL (a policy's rate limit, a relay key's expiry …).
//
// It is imported by the generated packages openapi/controlgen and
// openapi/client (through x-go-type in openapi/control.yaml) and must not
// import anything of Relay's.
package nullable

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Nullable is absent (the zero value: nil or empty), null ({false: zero}) or
// set ({true: value}). It is a map so that encoding/json's omitempty drops an
// absent field when a request is encoded.
type Nullable[T any] map[bool]T

// The instantiations the spec names in x-go-type.
type (
	UUID  = Nullable[uuid.UUID]
	Int32 = Nullable[int32]
	Int64 = Nullable[int64]
	Time  = Nullable[time.Time]
)

// Value returns a Nullable set to v.
func Value[T any](v T) Nullable[T] { return Nullable[T]{true: v} }

// Null returns an explicit null.
func Null[T any]() Nullable[T] {
	var zero T
	return Nullable[T]{false: zero}
}

// FromPointer returns Null for nil, else a Nullable set to *p.
func FromPointer[T any](p *T) Nullable[T] {
	if p == nil {
		return Null[T]()
	}
	return Value(*p)
}

// IsSpecified reports whether the field was present: null or a value.
func (n Nullable[T]) IsSpecified() bool { return len(n) != 0 }

// IsNull reports whether the field was an explicit null.
func (n Nullable[T]) IsNull() bool {
	_, ok := n[false]
	return ok
}

// Get returns the value and true when one is set; false when absent or null.
func (n Nullable[T]) Get() (T, bool) {
	v, ok := n[true]
	return v, ok
}

// Pointer returns the value as a pointer: nil when absent or null.
func (n Nullable[T]) Pointer() *T {
	v, ok := n[true]
	if !ok {
		return nil
	}
	return &v
}

// MarshalJSON writes null for null (and for absent, which omitempty normally skips).
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	v, ok := n[true]
	if !ok {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON records null or the value; encoding/json calls it only for a
// field that is present.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*n = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*n = Value(v)
	return nil
}
