package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestPayloadCaptures(t *testing.T) {
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	project, other := uuid.New(), uuid.New()
	key := uuid.New()
	client := "client-1"
	rows := []PayloadCapture{
		{RequestID: "req-1", ClientRequestID: &client, CreatedAt: now, ProjectID: project, RelayKeyID: &key, Model: "m", Status: 200, RequestBody: []byte(`{"q":1}`), ResponseBody: []byte(`{"a":1}`)},
		{RequestID: "req-2", CreatedAt: now, ProjectID: project, RequestBody: []byte("{}"), ResponseBody: []byte{}, Truncated: true},
		{RequestID: "req-3", CreatedAt: now.Add(-48 * time.Hour), ProjectID: other, RequestBody: []byte("{}"), ResponseBody: []byte{}},
	}
	if n := mk[int64](t)(b.s.InsertPayloadCaptures(b.ctx, rows)); n != 3 {
		t.Fatalf("inserted %d", n)
	}
	got := mk[[]PayloadCapture](t)(b.s.PayloadCaptures(b.ctx, "req-1"))
	if len(got) != 1 || string(got[0].RequestBody) != `{"q":1}` || string(got[0].ResponseBody) != `{"a":1}` || *got[0].RelayKeyID != key ||
		!got[0].CreatedAt.Equal(now) || *got[0].ClientRequestID != client {
		t.Errorf("req-1: %+v", got)
	}
	if n := mk[int64](t)(b.s.DeletePayloadCapturesBefore(b.ctx, now.Add(-time.Hour), 1)); n != 1 {
		t.Errorf("expired %d, want req-3", n)
	}
	if n := mk[int64](t)(b.s.DeletePayloadCapture(b.ctx, "user:x", got[0])); n != 1 {
		t.Errorf("deleted %d of req-1", n)
	}
	if left := mk[[]PayloadCapture](t)(b.s.PayloadCaptures(b.ctx, "req-1")); len(left) != 0 {
		t.Errorf("req-1 after delete: %+v", left)
	}
	if n := mk[int64](t)(b.s.DeleteProjectPayloadCaptures(b.ctx, "user:x", project)); n != 1 {
		t.Errorf("deleted %d of the project", n)
	}
	// Both deletes are in the audit log, without the bodies.
	kind := string(KindPayloadCaptures)
	audit := mk[[]AuditLog](t)(b.s.ListAuditLog(b.ctx, AuditLogPage{Kind: &kind, Limit: 10}))
	if len(audit) != 2 || audit[0].ObjectID != "req-1" || audit[1].ObjectID != project.String() ||
		audit[0].Actor != "user:x" || audit[0].Action != "delete" {
		t.Fatalf("audit rows: %+v", audit)
	}
	var before map[string]any
	if err := json.Unmarshal(audit[0].Before, &before); err != nil || before["client_request_id"] != client || before["request_id"] != "req-1" ||
		before["request_body"] != nil || before["response_body"] != nil {
		t.Errorf("audit before: %s %v", audit[0].Before, err)
	}
}

// TestPayloadCaptures_DeleteStaysInItsProject: rows written before Relay
// minted its own ids could share one across projects (the caller's
// X-Request-ID); deleting one project's capture leaves the other's.
func TestPayloadCaptures_DeleteStaysInItsProject(t *testing.T) {
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	victim, attacker := uuid.New(), uuid.New()
	if _, err := b.s.InsertPayloadCaptures(b.ctx, []PayloadCapture{
		{RequestID: "shared", CreatedAt: now, ProjectID: victim, RequestBody: []byte("victim"), ResponseBody: []byte{}},
		{RequestID: "shared", CreatedAt: now.Add(time.Second), ProjectID: attacker, RequestBody: []byte("attacker"), ResponseBody: []byte{}},
	}); err != nil {
		t.Fatal(err)
	}
	got := mk[[]PayloadCapture](t)(b.s.PayloadCaptures(b.ctx, "shared"))
	if len(got) != 2 || got[0].ProjectID != attacker || got[1].ProjectID != victim {
		t.Fatalf("captures of the shared id, newest first: %+v", got)
	}
	if n := mk[int64](t)(b.s.DeletePayloadCapture(b.ctx, "user:x", got[0])); n != 1 {
		t.Errorf("deleted %d rows, want the attacker's one", n)
	}
	left := mk[[]PayloadCapture](t)(b.s.PayloadCaptures(b.ctx, "shared"))
	if len(left) != 1 || left[0].ProjectID != victim {
		t.Errorf("left: %+v, want the victim's capture", left)
	}
}
