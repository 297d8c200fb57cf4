package mockupstream_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// batchInput is a two-line batch input file for the chat endpoint.
const batchInput = `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"one"}],"max_tokens":50}}
{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"two two"}],"max_tokens":50}}
`

// Files and batches held to openai-go: upload, list, retrieve, content,
// delete; a batch from validating to completed with its output file and
// usage; another credential's ids are 404.
func TestObjects_OpenAISDK(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	c := endpointClient(b)
	other := openai.NewClient(option.WithBaseURL(b.srv.URL+"/v1"), option.WithAPIKey("sk-other"), option.WithMaxRetries(0))
	ctx := ctx(t)

	f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(batchInput), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.ID, "file-") || f.Bytes != int64(len(batchInput)) || f.Filename != "in.jsonl" || f.Purpose != "batch" {
		t.Fatalf("file = %+v", f)
	}
	if got, err := c.Files.Get(ctx, f.ID); err != nil || got.ID != f.ID {
		t.Fatalf("get = %v, %v", got, err)
	}
	resp, err := c.Files.Content(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(content) != batchInput {
		t.Fatalf("content = %q", content)
	}
	list, err := c.Files.List(ctx, openai.FileListParams{})
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != f.ID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := other.Files.Get(ctx, f.ID); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("another key's get: %v, want 404", err)
	}
	if l, err := other.Files.List(ctx, openai.FileListParams{}); err != nil || len(l.Data) != 0 {
		t.Fatalf("another key's list = %+v, %v", l, err)
	}

	batch, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(batch.ID, "batch_") || batch.Status != "validating" || batch.InputFileID != f.ID {
		t.Fatalf("batch = %+v", batch)
	}
	if _, err := other.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h}); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("a batch on another key's file: %v, want 404", err)
	}
	var statuses []string
	for range 5 {
		batch, err = c.Batches.Get(ctx, batch.ID)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, string(batch.Status))
		if batch.Status == "completed" {
			break
		}
	}
	if strings.Join(statuses, ",") != "in_progress,completed" {
		t.Fatalf("statuses = %v", statuses)
	}
	if batch.RequestCounts.Total != 2 || batch.RequestCounts.Completed != 2 || batch.Model != "gpt-4o-mini" || batch.Usage.InputTokens == 0 || batch.Usage.OutputTokens == 0 || batch.OutputFileID == "" {
		t.Fatalf("completed batch = %+v", batch)
	}
	resp, err = c.Files.Content(ctx, batch.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var in, out int64
	lines := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			CustomID string `json:"custom_id"`
			Response struct {
				StatusCode int                   `json:"status_code"`
				Body       openai.ChatCompletion `json:"body"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Response.StatusCode != 200 || !strings.Contains(line.Response.Body.Choices[0].Message.Content, "Hello from gpt-4o-mini") {
			t.Fatalf("output line = %s", sc.Bytes())
		}
		in += line.Response.Body.Usage.PromptTokens
		out += line.Response.Body.Usage.CompletionTokens
		lines++
	}
	if lines != 2 || in != batch.Usage.InputTokens || out != batch.Usage.OutputTokens {
		t.Fatalf("%d lines with %d/%d tokens; the batch says %+v", lines, in, out, batch.Usage)
	}
	bl, err := c.Batches.List(ctx, openai.BatchListParams{})
	if err != nil || len(bl.Data) != 1 || bl.Data[0].ID != batch.ID {
		t.Fatalf("batch list = %+v, %v", bl, err)
	}
	if _, err := other.Batches.Get(ctx, batch.ID); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("another key's batch: %v, want 404", err)
	}

	// Cancel: cancelling, then cancelled.
	b2, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	if b2, err = c.Batches.Cancel(ctx, b2.ID); err != nil || b2.Status != "cancelling" {
		t.Fatalf("cancel = %+v, %v", b2, err)
	}
	if b2, err = c.Batches.Get(ctx, b2.ID); err != nil || b2.Status != "cancelled" {
		t.Fatalf("after cancel = %+v, %v", b2, err)
	}

	if _, err := other.Files.Delete(ctx, f.ID); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("another key's delete: %v, want 404", err)
	}
	if d, err := c.Files.Delete(ctx, f.ID); err != nil || !d.Deleted {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	if _, err := c.Files.Get(ctx, f.ID); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("get after delete: %v, want 404", err)
	}
}

func isStatus(err error, status int) bool {
	var ae *openai.Error
	return errors.As(err, &ae) && ae.StatusCode == status
}
