package ratelimit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// imagePrice is what one 1024x1024 standard image costs in these tests
// ($0.04, in micro-units); any other image costs otherImagePrice.
const (
	imagePrice      = 40_000
	otherImagePrice = 50_000
	secondPrice     = 100 // $0.006 a minute
)

// unitCatalog is newCatalog with the binding priced per image and per
// second of audio, and no token price: all it costs is its units.
func unitCatalog(baseURL string) *catalog {
	c := newCatalog(baseURL)
	c.model.Name, c.model.Kind, c.model.MaxOutputTokens = "painter", "image", 0
	c.binding.UpstreamModel = "gpt-image-1"
	c.binding.Pricing = snapshot.Pricing{Units: []snapshot.UnitPrice{
		{Unit: snapshot.UnitImage, Price: otherImagePrice},
		{Unit: snapshot.UnitImage, Size: "1024x1024", Quality: "standard", Price: imagePrice},
		{Unit: snapshot.UnitSecond, Price: secondPrice},
	}}
	return c
}

// A budget counts an image request's images at the binding's unit prices,
// reserved as asked and settled as used, exactly on every backend (in
// memory, and across three pods on Redis and on a Redis Cluster): a
// project whose budget holds 7 images is admitted 7 of 20 concurrent
// requests, spends exactly their price, and is refused the next.
func TestLimiter_BudgetCountsImages(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := unitCatalog("http://unused")
			b := c.budget(snapshot.Budget{ProjectID: c.project.ID, Period: "day", Amount: 7 * imagePrice})
			snap := c.build()
			pods := 1
			if be.redis {
				pods = 3
			}
			ls := be.open(t, pods, Options{})
			units := wire.Units{Images: 1, Size: "1024x1024", Quality: "standard"}
			adm := func() *admission.Admission {
				a := c.admission(t, snap, 0, 0)
				a.Inbound, a.Units = wire.InboundImages, units
				return a
			}
			var wg sync.WaitGroup
			var got tally
			for i := range 20 {
				wg.Go(func() {
					r, err := attempt(t.Context(), ls[i%pods], adm(), c.hostKey, c.binding)
					got.add(code(err))
					if err == nil {
						r.(admission.UnitSettler).DoneUnits(wire.Usage{}, units)
					}
				})
			}
			wg.Wait()
			flush(t, ls...)
			if got.codes[""] != 7 || got.codes["budget_exceeded"] != 13 {
				t.Fatalf("outcomes %v, want 7 admitted and 13 budget_exceeded", got.codes)
			}
			spent, err := ls[0].Spent(t.Context(), b)
			if err != nil || spent != 7*imagePrice {
				t.Fatalf("spent %d (%v), want exactly 7 images: %d", spent, err, 7*imagePrice)
			}
			if _, err := attempt(t.Context(), ls[pods-1], adm(), c.hostKey, c.binding); code(err) != "budget_exceeded" {
				t.Fatalf("an image request on a spent budget: %v, want budget_exceeded", err)
			}
		})
	}
}

// An image request reserves its images by size and quality (n of them),
// and a request that failed (no units used) gives its reservation back;
// a transcription reserves its estimated seconds and settles the seconds
// used, by the millisecond rounded up to a micro-unit.
func TestLimiter_BudgetSettlesUnits(t *testing.T) {
	t.Parallel()
	c := unitCatalog("http://unused")
	b := c.budget(snapshot.Budget{RelayKeyID: c.key.ID, Period: "month", Amount: 10_000_000})
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	spent := func() int64 {
		t.Helper()
		flush(t, l)
		n, err := l.Spent(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := c.admission(t, snap, 0, 0)
	a.Inbound, a.Units = wire.InboundImages, wire.Units{Images: 3, Size: "1792x1024", Quality: "hd"}
	r, err := attempt(t.Context(), l, a, c.hostKey, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	if n := spent(); n != 3*otherImagePrice {
		t.Fatalf("reserved %d, want 3 images at %d", n, otherImagePrice)
	}
	r.(admission.UnitSettler).DoneUnits(wire.Usage{}, wire.Units{}) // the upstream failed
	if n := spent(); n != 0 {
		t.Fatalf("spent %d after a failed image request, want 0", n)
	}

	a = c.admission(t, snap, 0, 0)
	a.Inbound, a.Units = wire.InboundTranscriptions, wire.Units{Millis: 60_000}
	r, err = attempt(t.Context(), l, a, c.hostKey, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	if n := spent(); n != 60*secondPrice {
		t.Fatalf("reserved %d, want 60 s at %d", n, secondPrice)
	}
	r.(admission.UnitSettler).DoneUnits(wire.Usage{}, wire.Units{Millis: 12_345}) // 1 234.5 µ
	if n := spent(); n != 1235 {
		t.Fatalf("spent %d after 12.345 s, want 1235 (rounded up)", n)
	}
}

// Through the proxy: image generations and transcriptions count against a
// project's budget at the binding's unit prices, across two proxies ("pods")
// sharing Redis, and a project whose budget is spent is refused an image
// request with OpenAI's 429 budget_exceeded, as it is a chat request.
func TestProxy_BudgetCountsUnitsAcrossPods(t *testing.T) {
	t.Parallel()
	mock := mockupstream.New(mockupstream.Options{})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	c := unitCatalog(up.URL)
	scribe := &snapshot.Model{ID: c.id(), Name: "scribe", Kind: "audio"}
	c.data.Models = append(c.data.Models, scribe)
	c.data.Bindings = append(c.data.Bindings, &snapshot.Binding{ID: c.id(), ModelID: scribe.ID, HostID: c.host.ID,
		Shape: wire.ShapeOpenAI, UpstreamModel: "whisper-1", Enabled: true, Pricing: c.binding.Pricing})
	// A 10-second transcription (estimated at 11 s from its form's size,
	// settled at the 10 s whisper-1 reports) and three images.
	b := c.budget(snapshot.Budget{ProjectID: c.project.ID, Period: "day", Amount: 3*imagePrice + 10*secondPrice})
	snap := c.build()
	ls := openRedis(t, redistest.URL(t), 2, Options{})
	var srvs []*httptest.Server
	for _, l := range ls {
		srv := httptest.NewServer(proxy.New(proxy.Config{Limiter: l, Snapshot: func() *snapshot.Snapshot { return snap }}))
		t.Cleanup(srv.Close)
		srvs = append(srvs, srv)
	}
	image := `{"model":"painter","prompt":"a lighthouse","size":"1024x1024","quality":"standard"}`
	post := func(srv *httptest.Server, path, contentType string, body io.Reader) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, body)
		req.Header.Set("Authorization", "Bearer "+testRelayKey)
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	form, ct := audioForm(t, "scribe", 10*16384)
	if st, body := post(srvs[1], "/v1/audio/transcriptions", ct, strings.NewReader(form)); st != 200 {
		t.Fatalf("transcription: %d %s", st, body)
	}
	flush(t, ls...)
	for i := range 3 {
		if st, body := post(srvs[i%2], "/v1/images/generations", "application/json", strings.NewReader(image)); st != 200 {
			t.Fatalf("image %d: %d %s", i, st, body)
		}
	}
	flush(t, ls...)
	if spent, err := ls[0].Spent(t.Context(), b); err != nil || spent != b.Amount {
		t.Fatalf("spent %d (%v), want the 3 images and 10 s exactly: %d", spent, err, b.Amount)
	}
	st, body := post(srvs[0], "/v1/images/generations", "application/json", strings.NewReader(image))
	var e struct {
		Error struct{ Type, Code, Message string }
	}
	_ = json.Unmarshal([]byte(body), &e)
	if st != 429 || e.Error.Code != "budget_exceeded" || !strings.Contains(e.Error.Message, "project") {
		t.Fatalf("an image request on a spent budget: %d %s, want OpenAI's 429 budget_exceeded", st, body)
	}
	if got := len(mock.Requests()); got != 4 {
		t.Fatalf("the mock saw %d requests, want 4: the refused one never went upstream", got)
	}
}

// audioForm is a transcription's multipart form of size bytes of audio.
func audioForm(t *testing.T, model string, size int) (body, contentType string) {
	t.Helper()
	const boundary = "relay-test-boundary"
	var sb strings.Builder
	fmt.Fprintf(&sb, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp3\"\r\nContent-Type: audio/mpeg\r\n\r\n", boundary)
	sb.WriteString(strings.Repeat("a", size))
	fmt.Fprintf(&sb, "\r\n--%s\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n%s\r\n--%s--\r\n", boundary, model, boundary)
	return sb.String(), "multipart/form-data; boundary=" + boundary
}
