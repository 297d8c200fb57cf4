package store

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestPayloadCaptures(t *testing.T) {
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	project, other := uuid.New(), uuid.New()
	key := uuid.New()
	rows := []PayloadCapture{
		{RequestID: "req-1", CreatedAt: now, ProjectID: project, RelayKeyID: &key, Model: "m", Status: 200, RequestBody: []byte(`{"q":1}`), ResponseBody: []byte(`{"a":1}`)},
		{RequestID: "req-2", CreatedAt: now, ProjectID: project, RequestBody: []byte("{}"), ResponseBody: []byte{}, Truncated: true},
		{RequestID: "req-3", CreatedAt: now.Add(-48 * time.Hour), ProjectID: other, RequestBody: []byte("{}"), ResponseBody: []byte{}},
	}
	if n := mk[int64](t)(b.s.InsertPayloadCaptures(b.ctx, rows)); n != 3 {
		t.Fatalf("inserted %d", n)
	}
	got := mk[PayloadCapture](t)(b.s.PayloadCapture(b.ctx, "req-1"))
	if string(got.RequestBody) != `{"q":1}` || string(got.ResponseBody) != `{"a":1}` || *got.RelayKeyID != key || !got.CreatedAt.Equal(now) {
		t.Errorf("req-1: %+v", got)
	}
	if n := mk[int64](t)(b.s.DeletePayloadCapturesBefore(b.ctx, now.Add(-time.Hour), 1)); n != 1 {
		t.Errorf("expired %d, want req-3", n)
	}
	if n := mk[int64](t)(b.s.DeletePayloadCaptures(b.ctx, "req-1")); n != 1 {
		t.Errorf("deleted %d of req-1", n)
	}
	_, err := b.s.PayloadCapture(b.ctx, "req-1")
	wantErr(t, err, ErrNotFound)
	if n := mk[int64](t)(b.s.DeleteProjectPayloadCaptures(b.ctx, project)); n != 1 {
		t.Errorf("deleted %d of the project", n)
	}
}
