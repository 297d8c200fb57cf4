package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/wire"
)

// Ten concurrent 25 MiB /v1/files uploads hold a bounded heap in Relay: a
// form over 1 MiB spills to an unlinked temporary file, its file part to
// one of its own, and the upstream body is read from it as it is sent, so
// each upload holds about 1 MiB of heap, not its size (held whole, each
// took its body, its file part and the re-encoded form: 75 MiB apiece).
// The mock keeps only each file's digest (mockupstream.Options.FileDigests),
// which a content read returns: the upstream received every byte. The
// bound is TestEndpoints_LargeUploadMemory's.
func TestObjects_LargeUploadMemory(t *testing.T) {
	f := newFixture(t)
	f.up.Close()
	f.mock = mockupstream.New(mockupstream.Options{FileDigests: true})
	f.up = httptest.NewServer(f.mock)
	t.Cleanup(f.up.Close)
	f.cfg.Objects = objects.NewMemory(objects.Options{Now: f.clock.Now})
	oa := f.host("openai")
	f.key(oa, "oa-1", filesSecret1)
	f.bind(f.model("gpt-test", true), oa, wire.ShapeOpenAI, "gpt-4o-mini")
	f.start()

	const size, n = 25 << 20, 10
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{28}).Read(data)
	sum := sha256.Sum256(data)
	want := "sha256:" + hex.EncodeToString(sum[:])
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "user_data")
	fw, _ := mw.CreateFormFile("file", "big.bin")
	_, _ = fw.Write(data)
	_ = mw.Close()
	form := body.Bytes()
	data = nil

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/files", bytes.NewReader(form))
			req.Header.Set("Content-Type", mw.FormDataContentType())
			req.Header.Set("Authorization", "Bearer "+relayKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var fo struct {
				ID    string
				Bytes int64
			}
			out, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || json.Unmarshal(out, &fo) != nil || fo.Bytes != size {
				t.Errorf("upload: %d %s, want 200 and a file of %d bytes", resp.StatusCode, out, size)
			}
			ids[i] = fo.ID
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	for _, id := range ids {
		if id == "" {
			continue
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+"/v1/files/"+id+"/content", nil)
		req.Header.Set("Authorization", "Bearer "+relayKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != want {
			t.Errorf("file %s reached the upstream as %s, want %s", id, got, want)
		}
	}
	above := peak.Load() - min(peak.Load(), base.HeapInuse)
	t.Logf("peak heap in use above the baseline during %d concurrent 25 MiB file uploads: %d MiB", n, above>>20)
	if above > 96<<20 {
		t.Errorf("peak heap %d MiB above the baseline, over the 96 MiB bound", above>>20)
	}
}
