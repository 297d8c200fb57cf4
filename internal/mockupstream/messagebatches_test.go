package mockupstream_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// batchRequests are n Message Batches requests for model.
func batchRequests(model string, n int) []anthropic.MessageBatchNewParamsRequest {
	rs := make([]anthropic.MessageBatchNewParamsRequest, n)
	for i := range rs {
		rs[i] = anthropic.MessageBatchNewParamsRequest{CustomID: "req-" + string(rune('a'+i)), Params: anthropic.MessageBatchNewParamsRequestParams{
			Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("line " + string(rune('a'+i))))},
		}}
	}
	return rs
}

func isAnthropicStatus(err error, status int) bool {
	var ae *anthropic.Error
	return errors.As(err, &ae) && ae.StatusCode == status
}

func TestMessageBatches_AnthropicSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	c, other := anthropicClient(b, "sk-ant-one"), anthropicClient(b, "sk-ant-two")
	ctx := ctx(t)

	batch, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: batchRequests("claude-test-cached", 3)})
	if err != nil {
		t.Fatal(err)
	}
	hasPrefix(t, "id", batch.ID, "msgbatch_01")
	equal(t, "status", batch.ProcessingStatus, anthropic.MessageBatchProcessingStatusInProgress)
	equal(t, "processing", batch.RequestCounts.Processing, int64(3))
	if !batch.EndedAt.IsZero() || batch.ResultsURL != "" {
		t.Fatalf("a new batch = %+v", batch)
	}

	// Another key's batch is a 404, and not in its list.
	if _, err := other.Messages.Batches.Get(ctx, batch.ID, anthropic.MessageBatchGetParams{}); !isAnthropicStatus(err, http.StatusNotFound) {
		t.Fatalf("another key's get: %v, want 404", err)
	}
	if l, err := other.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(l.Data) != 0 {
		t.Fatalf("another key's list = %+v, %v", l, err)
	}
	// Results before the end are refused.
	s := c.Messages.Batches.ResultsStreaming(ctx, batch.ID, anthropic.MessageBatchResultsParams{})
	for s.Next() {
	}
	if !isAnthropicStatus(s.Err(), http.StatusBadRequest) {
		t.Fatalf("results of a running batch: %v, want 400", s.Err())
	}

	got, err := c.Messages.Batches.Get(ctx, batch.ID, anthropic.MessageBatchGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "status", got.ProcessingStatus, anthropic.MessageBatchProcessingStatusEnded)
	equal(t, "succeeded", got.RequestCounts.Succeeded, int64(3))
	if got.EndedAt.IsZero() || !strings.HasSuffix(got.ResultsURL, "/v1/messages/batches/"+batch.ID+"/results") {
		t.Fatalf("an ended batch = %+v", got)
	}
	s = c.Messages.Batches.ResultsStreaming(ctx, batch.ID, anthropic.MessageBatchResultsParams{})
	ids := map[string]bool{}
	for s.Next() {
		r := s.Current()
		ids[r.CustomID] = true
		if r.Result.Type != "succeeded" || !strings.HasPrefix(r.Result.Message.ID, "msg_01") || r.Result.Message.Usage.CacheReadInputTokens == 0 {
			t.Errorf("result = %+v", r)
		}
	}
	if s.Err() != nil || len(ids) != 3 || !ids["req-a"] {
		t.Fatalf("results: %v, custom ids %v", s.Err(), ids)
	}
	if l, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(l.Data) != 1 || l.Data[0].ID != batch.ID || l.FirstID != batch.ID {
		t.Fatalf("list = %+v, %v", l, err)
	}

	// Cancel: canceling, then ended with every request canceled.
	b2, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: batchRequests("claude-test", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Messages.Batches.Delete(ctx, b2.ID, anthropic.MessageBatchDeleteParams{}); !isAnthropicStatus(err, http.StatusBadRequest) {
		t.Fatalf("delete of a running batch: %v, want 400", err)
	}
	if b2, err = c.Messages.Batches.Cancel(ctx, b2.ID, anthropic.MessageBatchCancelParams{}); err != nil || b2.ProcessingStatus != anthropic.MessageBatchProcessingStatusCanceling {
		t.Fatalf("cancel = %+v, %v", b2, err)
	}
	if b2, err = c.Messages.Batches.Get(ctx, b2.ID, anthropic.MessageBatchGetParams{}); err != nil || b2.RequestCounts.Canceled != 2 || b2.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
		t.Fatalf("after cancel = %+v, %v", b2, err)
	}
	if l, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1)}); err != nil || len(l.Data) != 1 || l.Data[0].ID != b2.ID || !l.HasMore {
		t.Fatalf("a page of one = %+v, %v", l, err)
	}
	if d, err := c.Messages.Batches.Delete(ctx, b2.ID, anthropic.MessageBatchDeleteParams{}); err != nil || d.ID != b2.ID {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	if _, err := c.Messages.Batches.Get(ctx, b2.ID, anthropic.MessageBatchGetParams{}); !isAnthropicStatus(err, http.StatusNotFound) {
		t.Fatalf("get after delete: %v, want 404", err)
	}

	// Bad bodies are 400s in Anthropic's shape.
	for name, rs := range map[string][]anthropic.MessageBatchNewParamsRequest{
		"empty":     {},
		"bad id":    {{CustomID: "has space", Params: batchRequests("claude-test", 1)[0].Params}},
		"duplicate": append(batchRequests("claude-test", 1), batchRequests("claude-test", 1)...),
	} {
		if _, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: rs}); !isAnthropicStatus(err, http.StatusBadRequest) {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
}
