package controlapi

import (
	"context"
	"encoding/base64"
	"encoding/binary"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// The audit log is read at system scope only: its rows name objects of every
// team and project, so a caller whose read stops at a team or project gets
// 403 rather than a list that leaks the others' ids.

// ListAuditLog is the operation of the same name in openapi/control.yaml.
func (v *Service) ListAuditLog(ctx context.Context, params models.ListAuditLogParams) (out models.AuditList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListAuditLog")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if !c.Can(rbac.Read, rbac.System()) {
		return out, forbidden(rbac.Need(rbac.Read, rbac.System()))
	}
	after, fetch, err := auditPage(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	rows, err := s.st.ListAuditLog(ctx, store.AuditLogPage{
		After: after, Limit: fetch, Kind: params.Kind, ObjectID: params.ObjectID, Actor: params.Actor,
	})
	if err != nil {
		return out, err
	}
	var next *string
	if int32(len(rows)) == fetch {
		rows = rows[:fetch-1]
		cur := base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(rows[len(rows)-1].ID)))
		next = &cur
	}
	items := make([]models.AuditEntry, len(rows))
	for i, r := range rows {
		items[i] = models.AuditEntry{ID: r.ID, At: r.At, Actor: r.Actor, Action: models.AuditEntryAction(r.Action), Kind: r.Kind, ObjectID: r.ObjectID, ClientAddr: r.ClientAddr}
	}
	return models.AuditList{Items: items, NextCursor: next}, nil
}

// auditPage is page for the audit log, whose rows are keyed by a sequence
// number rather than a UUID: the cursor is the last row's number.
func auditPage(limit *int32, cursor *string) (after int64, fetch int32, err error) {
	n := int32(defaultLimit)
	if limit != nil {
		n = min(max(*limit, 1), maxLimit)
	}
	if cursor != nil && *cursor != "" {
		b, derr := base64.RawURLEncoding.DecodeString(*cursor)
		if derr != nil || len(b) != 8 || int64(binary.BigEndian.Uint64(b)) < 0 {
			return 0, 0, badRequest("cursor: not a cursor this API returned", detail("cursor", "not a cursor this API returned"))
		}
		after = int64(binary.BigEndian.Uint64(b))
	}
	return after, n + 1, nil
}
