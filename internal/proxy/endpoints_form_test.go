package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"runtime"
	"strconv"
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

// Ten concurrent 25 MiB uploads (the model after the file, as openai-go
// writes it) all reach the mock whole, with the binding's upstream model,
// while the heap stays bounded: a form over 1 MiB spills to an unlinked
// temporary file (internal/spill), so each upload holds at most 1 MiB of
// heap in Relay besides copy buffers. The bound, 96 MiB above the baseline,
// is ten spill thresholds plus the transports' and the mock's buffers with
// room for the garbage the collector has not yet taken; reading the bodies
// whole took ten bodies (250 MiB) and more.
func TestEndpoints_LargeUploadMemory(t *testing.T) {
	f := endpointsFixture(t)
	f.start()
	const size, n = 25 << 20, 10
	audio := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{26}).Read(audio)
	sum := sha256.Sum256(audio)
	want := hex.EncodeToString(sum[:])
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "long.mp3")
	_, _ = fw.Write(audio)
	_ = mw.WriteField("model", "scribe")
	_ = mw.Close()
	form := body.Bytes()
	audio = nil

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	rssBase, rssOK := resetPeakRSS()
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
	defer func() {
		if hwm, ok := procStatus("VmHWM:"); ok && rssOK {
			// The whole test process: Relay, the mock and the callers
			// (whose one 25 MiB form all ten share).
			t.Logf("peak RSS during %d concurrent 25 MiB uploads: %d MiB (%d MiB before them)", n, hwm>>20, rssBase>>20)
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
	ups := f.mock.Requests()
	got := 0
	for _, up := range ups {
		if up.Path != "/v1/audio/transcriptions" {
			continue
		}
		got++
		if up.Model != "gpt-4o-transcribe" || len(up.Files) != 1 || up.Files[0].Size != size || up.Files[0].SHA256 != want {
			t.Errorf("upstream model %q, files %+v; want one of %d bytes, sha256 %s", up.Model, up.Files, size, want)
		}
	}
	if got != n {
		t.Errorf("%d uploads reached the mock, want %d", got, n)
	}
	above := peak.Load() - min(peak.Load(), base.HeapInuse)
	t.Logf("peak heap in use above the baseline during %d concurrent 25 MiB uploads: %d MiB", n, above>>20)
	if above > 96<<20 {
		t.Errorf("peak heap %d MiB above the baseline, over the 96 MiB bound", above>>20)
	}
}

// A spilled image edit (a 3 MiB image, over the 1 MiB kept in memory)
// keeps what Relay decides on: the upstream reads the binding's model, the
// n and size the record is priced by, and the image whole.
func TestEndpoints_SpilledFormKeepsItsFields(t *testing.T) {
	t.Parallel()
	f := endpointsFixture(t)
	f.start()
	image := append(onePixelPNG(t), make([]byte, 3<<20)...)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(image[100:])
	sum := sha256.Sum256(image)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("image", "cat.png")
	_, _ = fw.Write(image)
	_ = mw.WriteField("model", "painter")
	_ = mw.WriteField("n", "2")
	_ = mw.WriteField("prompt", "add a hat")
	_ = mw.WriteField("size", "1024x1536")
	_ = mw.Close()
	resp, out := f.post("/v1/images/edits", body.String(), map[string]string{"Content-Type": mw.FormDataContentType()})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	up := f.waitFor(func(r mockupstream.Request) bool { return r.Path == "/v1/images/edits" })
	if up.Model != "gpt-image-1" || len(up.Files) != 1 || up.Files[0].SHA256 != hex.EncodeToString(sum[:]) || up.Files[0].Size != int64(len(image)) {
		t.Fatalf("upstream model %q, files %+v", up.Model, up.Files)
	}
	if rec := f.rec.next(t); rec.Inbound != "openai_image_edits" || rec.Units.Images != 2 || rec.Units.Size != "1024x1536" {
		t.Fatalf("record units %+v", rec.Units)
	}
}

// A form too large for memory that the temporary directory cannot take is
// a 503 in the caller's shape, and nothing goes upstream.
func TestEndpoints_SpillFailureIsUnavailable(t *testing.T) {
	t.Setenv("TMPDIR", "/nonexistent/relay-spill-test")
	f := endpointsFixture(t)
	f.start()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "long.mp3")
	_, _ = fw.Write(make([]byte, 2<<20))
	_ = mw.WriteField("model", "scribe")
	_ = mw.Close()
	resp, out := f.post("/v1/audio/transcriptions", body.String(), map[string]string{"Content-Type": mw.FormDataContentType()})
	if e := decodeError(t, out); resp.StatusCode != 503 || !strings.Contains(e.Error.Message, "could not hold the upload") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	f.rec.next(t)
	for _, up := range f.mock.Requests() {
		if up.Path == "/v1/audio/transcriptions" {
			t.Fatalf("the form went upstream: %+v", up.Files)
		}
	}
}

// resetPeakRSS resets the process's peak resident set (Linux: writing 5 to
// /proc/self/clear_refs) and returns the resident set now; false where
// that cannot be done.
func resetPeakRSS() (int64, bool) {
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) != nil {
		return 0, false
	}
	return procStatus("VmRSS:")
}

// procStatus reads one kB field of /proc/self/status, in bytes.
func procStatus(field string) (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
