package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// secretFields never reach the audit log, whatever the kind: host key
// ciphertext, password hashes, key and token hashes, session CSRF tokens.
var secretFields = map[string]bool{
	"SecretCiphertext":     true,
	"AuthSecretCiphertext": true, // an MCP server's sealed header value
	"PasswordHash":         true,
	"KeyHash":              true,
	"TokenHash":            true,
	"CSRFToken":            true,
}

// AuditLogPage asks for up to Limit audit rows with IDs after After (0 for
// the first page); Kind, ObjectID and Actor, when set, keep only those rows.
type AuditLogPage struct {
	After    int64
	Kind     *string
	ObjectID *string
	Actor    *string
	Limit    int32
}

// Audit records one audit row in t: actor did action (create, update,
// delete, revoke, rotate, login, logout) to the object of kind (a table name)
// with objectID. before and after are rows (or nil); they are stored as JSON
// objects keyed by column name, without secrets.
func (t *Tx) Audit(ctx context.Context, actor, action, kind, objectID string, before, after any) error {
	b, err := auditJSON(before)
	if err != nil {
		return err
	}
	a, err := auditJSON(after)
	if err != nil {
		return err
	}
	_, err = t.q.InsertAuditLog(ctx, dbsqlc.InsertAuditLogParams{
		Actor: actor, Action: action, Kind: kind, ObjectID: objectID, Before: b, After: a, ClientAddr: clientAddr(ctx),
	})
	if err != nil {
		return fmt.Errorf("write audit log: %w", mapErr(err))
	}
	return nil
}

type clientAddrKey struct{}

// WithClientAddr returns ctx carrying the address of the client a request
// came from; every audit row written with it records that address. A value
// longer than an address (64 bytes) is cut.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	if len(addr) > 64 {
		addr = addr[:64]
	}
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// clientAddr is WithClientAddr's address, or nil.
func clientAddr(ctx context.Context) *string {
	if a, ok := ctx.Value(clientAddrKey{}).(string); ok && a != "" {
		return &a
	}
	return nil
}

// ListAuditLog returns one page of the audit log, oldest first.
func (s *Store) ListAuditLog(ctx context.Context, p AuditLogPage) ([]AuditLog, error) {
	rows, err := s.q.ListAuditLogPage(ctx, dbsqlc.ListAuditLogPageParams(p))
	if err != nil {
		return nil, fmt.Errorf("list audit log: %w", mapErr(err))
	}
	return each(rows, func(r dbsqlc.AuditLog) AuditLog { return AuditLog(r) }), nil
}

// auditJSON encodes a row (or a pointer to one) as a JSON object keyed by
// column name, leaving out secretFields; nil stays nil (SQL NULL). A row is
// a struct without json tags, so encoding/json keys it by field name.
func auditJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("audit %T: %w", v, err)
	}
	if string(b) == "null" { // nil, or a nil pointer
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("audit %T: not a row", v)
	}
	cols := make(map[string]json.RawMessage, len(fields))
	for f, val := range fields {
		if !secretFields[f] {
			cols[columnName(f)] = val
		}
	}
	b, err = json.Marshal(cols)
	if err != nil {
		return nil, fmt.Errorf("audit %T: %w", v, err)
	}
	return b, nil
}

// columnName turns a generated Go field name back into its column name:
// BaseURL → base_url, TTFBMs → ttfb_ms, SupportsJSON → supports_json.
func columnName(field string) string {
	rs := []rune(field)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			acronymEnd := i > 0 && unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || acronymEnd {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
