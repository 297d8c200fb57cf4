package proxy_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
)

func onePixelPNG(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The multipart endpoints through openai-go (which writes the file part
// before the model): routed by the form's model, sent upstream with the
// binding's upstream model, usage recorded.
func TestEndpoints_MultipartThroughOpenAISDK(t *testing.T) {
	t.Parallel()
	f := endpointsFixture(t)
	f.start()
	c := f.openai()
	ctx := t.Context()

	tr, err := c.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{Model: "scribe", File: openai.File(bytes.NewReader(make([]byte, 8192)), "a.mp3", "audio/mpeg")})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Text != "Mock transcription of 8192 bytes of audio." {
		t.Fatalf("transcription %s", tr.RawJSON())
	}
	up := f.waitFor(func(r mockupstream.Request) bool { return r.Path == "/v1/audio/transcriptions" })
	if up.Model != "gpt-4o-transcribe" || !strings.HasPrefix(up.Header.Get("Content-Type"), "multipart/form-data; boundary=") {
		t.Fatalf("upstream model %q, content type %q", up.Model, up.Header.Get("Content-Type"))
	}
	if rec := f.rec.next(t); rec.Inbound != "openai_transcriptions" || rec.Usage.Input != 8 || rec.Usage.Output == 0 {
		t.Fatalf("record %+v", rec.Usage)
	}

	//lint:ignore SA1019 OpenAI still serves the endpoint, and Relay with it
	tl, err := c.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{Model: "scribe", File: openai.File(bytes.NewReader(make([]byte, 100)), "a.mp3", "audio/mpeg")})
	if err != nil || tl.Text != "Mock translation of 100 bytes of audio." {
		t.Fatalf("translation %v %v", tl, err)
	}
	f.rec.next(t)

	edit, err := c.Images.Edit(ctx, openai.ImageEditParams{Model: "painter", Prompt: "add a hat",
		Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(bytes.NewReader(onePixelPNG(t)), "cat.png", "image/png")}})
	if err != nil || len(edit.Data) != 1 {
		t.Fatalf("edit %v %v", edit, err)
	}
	if rec := f.rec.next(t); rec.Inbound != "openai_image_edits" || rec.Usage.Output == 0 {
		t.Fatalf("edit record %+v", rec)
	}
	//lint:ignore SA1019 OpenAI still serves the endpoint, and Relay with it
	if _, err := c.Images.NewVariation(ctx, openai.ImageNewVariationParams{Model: "painter", Image: openai.File(bytes.NewReader(onePixelPNG(t)), "cat.png", "image/png")}); err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)

	// A form without a model, and with two: refused, naming the field.
	for name, fields := range map[string][]string{"none": nil, "twice": {"scribe", "other"}} {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for _, m := range fields {
			_ = mw.WriteField("model", m)
		}
		fw, _ := mw.CreateFormFile("file", "a.mp3")
		_, _ = fw.Write([]byte("abc"))
		_ = mw.Close()
		resp, out := f.post("/v1/audio/transcriptions", body.String(), map[string]string{"Content-Type": mw.FormDataContentType()})
		if e := decodeError(t, out); resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != "model" {
			t.Errorf("%s: %d %s", name, resp.StatusCode, out)
		}
		f.rec.next(t)
	}
}

// A 25 MB upload goes through with the heap bounded by a few copies of
// the body (the body is read whole, see endpoints_form.go). Run with a
// larger n to measure concurrent uploads; one keeps the suite light.
func TestEndpoints_LargeUploadMemory(t *testing.T) {
	f := endpointsFixture(t)
	f.start()
	const size = 25 << 20
	audio := make([]byte, size)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "long.mp3")
	_, _ = fw.Write(audio)
	_ = mw.WriteField("model", "scribe")
	_ = mw.Close()
	form := body.Bytes()
	audio = nil

	run := func(n int) uint64 {
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
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/audio/transcriptions", bytes.NewReader(form))
				req.Header.Set("Content-Type", mw.FormDataContentType())
				req.Header.Set("Authorization", "Bearer "+relayKey)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var out bytes.Buffer
				_, _ = out.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(out.String(), fmt.Sprintf("of %d bytes", size)) {
					t.Errorf("%d %s", resp.StatusCode, out.String())
				}
			})
		}
		wg.Wait()
		close(stop)
		<-sampled
		for range n {
			f.rec.next(t)
		}
		return peak.Load() - min(peak.Load(), base.HeapInuse)
	}
	one := run(1)
	t.Logf("peak heap above the baseline: one 25 MiB upload %d MiB", one>>20)
	if one > 4*size {
		t.Errorf("one upload took %d MiB of heap, more than 4 bodies", one>>20)
	}
}
