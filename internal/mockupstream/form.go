package mockupstream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
)

// maxFormField bounds one non-file field of a multipart form.
const maxFormField = 64 << 10

// readForm reads a multipart form as a stream, never holding a file part:
// field(name) says where a text field goes (nil: ignored), file(name, head,
// size) sees each file part's first 512 bytes and size once it has been
// read through. It returns every text field read. Each file part's name,
// size and SHA-256 go into x's record (Request.Files).
func readForm(r *http.Request, x *exchange, field func(name string) *string, file func(name string, head []byte, size int64) *apiError) (map[string]string, *apiError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return nil, &apiError{kind: errInvalid, msg: "Invalid Content-Type header (" + r.Header.Get("Content-Type") + "), expected multipart/form-data. (HINT: If you're using curl, you can pass -H 'Content-Type: multipart/form-data')"}
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, &apiError{kind: errInvalid, msg: "Could not parse multipart form"}
	}
	fields := make(map[string]string)
	head := make([]byte, 512)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, nil
		}
		if err != nil {
			return nil, &apiError{kind: errInvalid, msg: "Could not parse multipart form"}
		}
		name := p.FormName()
		if p.FileName() != "" {
			sum := sha256.New()
			n, _ := io.ReadFull(io.TeeReader(p, sum), head)
			rest, err := io.Copy(sum, p)
			if err != nil {
				return nil, &apiError{kind: errInvalid, msg: "Could not parse multipart form"}
			}
			x.files = append(x.files, FormFile{Field: name, Filename: p.FileName(), Size: int64(n) + rest, SHA256: hex.EncodeToString(sum.Sum(nil))})
			if e := file(name, head[:n], int64(n)+rest); e != nil {
				return nil, e
			}
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxFormField+1))
		if err != nil || len(v) > maxFormField {
			return nil, &apiError{kind: errInvalid, msg: "Could not parse multipart form"}
		}
		fields[name] = string(v)
		if dst := field(name); dst != nil {
			*dst = string(v)
		}
	}
}

// FormFile is one file part of a multipart request as the mock read it.
type FormFile struct {
	Field, Filename string
	Size            int64
	SHA256          string // hex
}
