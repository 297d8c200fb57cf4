package proxy

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"testing"
)

// FuzzFormPart holds formPart to mime/multipart: whenever formPart finds
// the model field, the standard reader finds the same single value.
func FuzzFormPart(f *testing.F) {
	seed := func(fields ...string) []byte {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.SetBoundary("BOUNDARY")
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "file" {
				w, _ := mw.CreateFormFile("file", "a.mp3")
				_, _ = w.Write([]byte(fields[i+1]))
				continue
			}
			_ = mw.WriteField(fields[i], fields[i+1])
		}
		_ = mw.Close()
		return b.Bytes()
	}
	f.Add(seed("model", "whisper-1", "file", "abc"))
	f.Add(seed("file", "abc\r\n--BOUNDAR", "model", "gpt-4o-transcribe"))
	f.Add(seed("model", "a", "model", "b"))
	f.Add(seed("file", "x"))
	f.Add([]byte("--BOUNDARY\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm"))
	f.Add([]byte("--BOUNDARY--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		start, end, err := formPart(body, "BOUNDARY", "model")
		if err != nil {
			return
		}
		got := string(body[start:end])
		mr := multipart.NewReader(bytes.NewReader(body), "BOUNDARY")
		var values []string
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return // the standard reader refuses what formPart took: not a disagreement on the model
			}
			if p.FormName() == "model" && p.FileName() == "" {
				v, _ := io.ReadAll(p)
				values = append(values, string(v))
			}
		}
		if len(values) != 1 || values[0] != got {
			t.Fatalf("formPart found %q; mime/multipart %q", got, values)
		}
	})
}
