package usage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

// Unit prices: images priced per image by size and quality (the most
// specific price that matches), transcriptions per second of audio as the
// upstream reports it — through Relay, the writer and Postgres.
func TestUsage_UnitPricesLandInTheLedger(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(mockupstream.New(mockupstream.Options{}))
	t.Cleanup(up.Close)
	ids := map[string]uuid.UUID{}
	for _, n := range []string{"team", "project", "sa", "policy", "key", "host", "hostkey", "dalle", "whisper", "b-dalle", "b-whisper"} {
		ids[n] = uuid.New()
	}
	policy := &snapshot.Policy{ID: ids["policy"], Slug: "p", AllHostKeys: true, KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 1,
		Models: map[snapshot.ID]struct{}{ids["dalle"]: {}, ids["whisper"]: {}}}
	images := snapshot.Pricing{Units: []snapshot.UnitPrice{
		{Unit: snapshot.UnitImage, Price: 50_000},                                         // $0.05, any other image
		{Unit: snapshot.UnitImage, Size: "1024x1024", Quality: "standard", Price: 40_000}, // $0.04
		{Unit: snapshot.UnitImage, Size: "1024x1792", Quality: "hd", Price: 120_000},      // $0.12
		{Unit: snapshot.UnitImage, Quality: "hd", Price: 80_000},                          // $0.08
	}}
	audio := snapshot.Pricing{Units: []snapshot.UnitPrice{{Unit: snapshot.UnitSecond, Price: 100}}} // $0.006 a minute
	d := &snapshot.Data{
		Teams:           []*snapshot.Team{{ID: ids["team"], Slug: "team"}},
		Projects:        []*snapshot.Project{{ID: ids["project"], TeamID: ids["team"], Slug: "proj"}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: ids["sa"], ProjectID: ids["project"], Slug: "app", PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys: []*snapshot.RelayKey{{ID: ids["key"], Hash: sha256.Sum256([]byte(relayKey)), DisplayPrefix: relayKey[:10],
			ProjectID: ids["project"], ServiceAccountID: ids["sa"]}},
		Hosts:    []*snapshot.Host{{ID: ids["host"], Slug: "openai", Name: "openai", BaseURL: up.URL, Enabled: true, ForwardHeaders: []string{"X-Request-Id"}}},
		HostKeys: []*snapshot.HostKey{{ID: ids["hostkey"], HostID: ids["host"], Slug: "k", Secret: snapshot.NewSecret("sk-up-units-1"), SecretVersion: 1, Enabled: true, Usable: true}},
		Models: []*snapshot.Model{
			{ID: ids["dalle"], Name: "dalle", Provider: "openai", Kind: "image"},
			{ID: ids["whisper"], Name: "whisper", Provider: "openai", Kind: "audio"},
		},
		Bindings: []*snapshot.Binding{
			{ID: ids["b-dalle"], ModelID: ids["dalle"], HostID: ids["host"], Shape: wire.ShapeOpenAI, UpstreamModel: "dall-e-3", Enabled: true, Pricing: images},
			{ID: ids["b-whisper"], ModelID: ids["whisper"], HostID: ids["host"], Shape: wire.ShapeOpenAI, UpstreamModel: "whisper-1", Enabled: true, Pricing: audio},
		},
	}
	snap := snapshot.Build(d, 1, time.Now())
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	w := usage.NewWriter(usage.WriterConfig{Sink: st, Snapshot: func() *snapshot.Snapshot { return snap }, FlushInterval: 20 * time.Millisecond})
	srv := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }, Recorder: w,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))

	send := func(id, path, contentType string, body []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+relayKey)
		req.Header.Set("X-Request-ID", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", id, resp.StatusCode, b)
		}
	}
	want := map[string]int64{} // nano-units
	gen := func(id, body string, cost int64) {
		send(id, "/v1/images/generations", "application/json", []byte(body))
		want[id] = cost
	}
	gen("two-standard", `{"model":"dalle","prompt":"a cat","n":2,"size":"1024x1024","quality":"standard"}`, 2*40_000_000)
	gen("tall-hd", `{"model":"dalle","prompt":"a cat","size":"1024x1792","quality":"hd"}`, 120_000_000)
	gen("square-hd", `{"model":"dalle","prompt":"a cat","size":"1024x1024","quality":"hd"}`, 80_000_000)
	gen("default", `{"model":"dalle","prompt":"a cat"}`, 50_000_000)

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "a.mp3")
	_, _ = fw.Write(bytes.Repeat([]byte{7}, 4*16384)) // the mock reports a second per 16 KiB
	_ = mw.WriteField("model", "whisper")
	_ = mw.Close()
	send("transcription", "/v1/audio/transcriptions", mw.FormDataContentType(), form.Bytes())
	want["transcription"] = 4000 * 100 // 4 s at 100 micro-units a second

	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := st.ListUsageEvents(ctx, store.UsageEventsPage{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		id := clientID(t, row)
		if row.Cost != want[id] {
			t.Errorf("%s: cost %d nano-units, want %d", id, row.Cost, want[id])
		}
	}
}
