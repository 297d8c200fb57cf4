package proxy_test

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/objects"
)

// TestObjects_IndexKeepsTheStateSeen: the index entry of a batch carries
// the last state the proxy saw of it — at creation, and after a retrieve
// that found it completed — with its request counts, so the control plane
// can show it without asking the upstream; a message batch likewise.
func TestObjects_IndexKeepsTheStateSeen(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	f.start()
	c := f.openai()
	ctx := t.Context()
	file := upload(t, c, batchLines("gpt-test", 50, 3))
	batch, err := newBatch(c, t, file.ID)
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.cfg.Objects.Get(ctx, f.project, objects.KindBatch, batch.ID)
	if err != nil || o.State == nil || o.State.Status != string(batch.Status) || o.State.SeenAt.IsZero() {
		t.Fatalf("after create: %+v, %v; want status %s", o.State, err, batch.Status)
	}
	for range 5 {
		if batch, err = c.Batches.Get(ctx, batch.ID); err != nil {
			t.Fatal(err)
		}
		if batch.Status == openai.BatchStatusCompleted {
			break
		}
	}
	o, err = f.cfg.Objects.Get(ctx, f.project, objects.KindBatch, batch.ID)
	if err != nil || o.State == nil || o.State.Status != "completed" || o.State.Total != 3 || o.State.Completed != batch.RequestCounts.Completed {
		t.Fatalf("after completion: %+v, %v; want completed with 3 requests (%+v)", o.State, err, batch.RequestCounts)
	}
	if f, err := f.cfg.Objects.Get(ctx, f.project, objects.KindFile, file.ID); err != nil || f.Attrs[objects.AttrPurpose] != "batch" || f.Size == 0 {
		t.Fatalf("file entry: %+v, %v", f, err)
	}
}

func TestMessageBatches_IndexKeepsTheStateSeen(t *testing.T) {
	t.Parallel()
	f := newMsgBatchFixture(t)
	f.start()
	c := f.anthropic()
	ctx := t.Context()
	batch, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: msgBatchRequests("claude-test", 3)})
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.cfg.Objects.Get(ctx, f.project, objects.KindMessageBatch, batch.ID)
	if err != nil || o.State == nil || o.State.Status != "in_progress" || o.State.Total != 3 {
		t.Fatalf("after create: %+v, %v", o.State, err)
	}
	for range 5 {
		if batch, err = c.Messages.Batches.Get(ctx, batch.ID, anthropic.MessageBatchGetParams{}); err != nil {
			t.Fatal(err)
		}
		if batch.ProcessingStatus == anthropic.MessageBatchProcessingStatusEnded {
			break
		}
	}
	o, err = f.cfg.Objects.Get(ctx, f.project, objects.KindMessageBatch, batch.ID)
	if err != nil || o.State == nil || o.State.Status != "ended" || o.State.Completed != batch.RequestCounts.Succeeded || o.State.Total != 3 {
		t.Fatalf("after it ended: %+v, %v; want ended (%+v)", o.State, err, batch.RequestCounts)
	}
}
