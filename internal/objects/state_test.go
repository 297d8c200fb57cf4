package objects

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestSeen reads the state of each kind from the upstream's own JSON: an
// OpenAI batch's status and counts, a message batch's processing_status
// with its counts summed, nothing for a kind without a state or a body
// that is not one.
func TestSeen(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name string
		kind Kind
		body string
		want *State
	}{
		{"batch", KindBatch, `{"id":"batch_1","status":"in_progress","request_counts":{"total":10,"completed":4,"failed":1}}`,
			&State{Status: "in_progress", Total: 10, Completed: 4, Failed: 1, SeenAt: at}},
		{"batch without counts", KindBatch, `{"id":"batch_1","status":"validating"}`, &State{Status: "validating", SeenAt: at}},
		{"message batch", KindMessageBatch, `{"id":"msgbatch_1","processing_status":"ended","request_counts":{"processing":0,"succeeded":7,"errored":1,"canceled":1,"expired":1}}`,
			&State{Status: "ended", Total: 10, Completed: 7, Failed: 3, SeenAt: at}},
		{"not json", KindBatch, `{"id":`, nil},
		{"no status", KindBatch, `{"id":"batch_1"}`, nil},
		{"file", KindFile, `{"id":"file-1","status":"processed"}`, nil},
	} {
		got := Seen(c.kind, []byte(c.body), at)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	a, b := Seen(KindBatch, []byte(`{"status":"completed"}`), at), Seen(KindBatch, []byte(`{"status":"completed"}`), at.Add(time.Hour))
	if !a.Same(b) || a.Same(nil) || a.Same(&State{Status: "failed"}) {
		t.Error("Same compares what was seen, not when")
	}
}

// TestIndex_KeepsState: the state on an entry comes back from Get and
// List on every index, and a caller's copy does not change the index's.
func TestIndex_KeepsState(t *testing.T) {
	onEachIndex(t, func(t *testing.T, pod newIndex) {
		ix := pod(Options{})
		ctx := t.Context()
		proj := uuid.New()
		at := time.Now().UTC().Truncate(time.Millisecond)
		o := Object{ID: "batch_s", Kind: KindBatch, ProjectID: proj, HostKeyID: uuid.New(), CreatedAt: at,
			State: &State{Status: "in_progress", Total: 3, Completed: 1, SeenAt: at}}
		if err := ix.Put(ctx, o); err != nil {
			t.Fatal(err)
		}
		o.State.Status = "changed by the caller"
		got, err := ix.Get(ctx, proj, KindBatch, "batch_s")
		if err != nil || got.State == nil || got.State.Status != "in_progress" || got.State.Total != 3 || !got.State.SeenAt.Equal(at) {
			t.Fatalf("get: %+v %v", got.State, err)
		}
		got.State.Status = "changed again"
		list, _, err := ix.List(ctx, proj, KindBatch, Page{})
		if err != nil || len(list) != 1 || list[0].State == nil || list[0].State.Status != "in_progress" {
			t.Fatalf("list: %+v %v", list, err)
		}
	})
}
