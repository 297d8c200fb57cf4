package proxy

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/spill"
	"github.com/relay-llm/relay/internal/wire"
)

// Multipart bodies (images edits and variations, audio transcriptions and
// translations) are read up to the body limit (RELAY_MAX_BODY_BYTES, 32 MiB
// by default) and never decoded into parts: formPart finds the model
// field's bytes in place, routing reads it, and the upstream body is the
// caller's bytes with that value replaced by the binding's upstream model
// (byte for byte the caller's when the two are the same). Why not a pure
// stream: the official SDKs write form fields in name order, so "file" and
// "image" come before "model", and a gateway cannot route before it knows
// the model; keeping the body keeps failover (the same bytes go to the next
// key). A body of at most formInMemory bytes is kept in memory; a larger
// one spills to an unlinked temporary file (package spill) that is mapped
// for the scan and read back in sections for each attempt, so concurrent
// uploads hold at most formInMemory of heap each, not their size.

// formInMemory is the most of a multipart body kept in memory.
const formInMemory = 1 << 20

// formPart is where a multipart form's text field begins and ends in the
// body; ok is false when the field is not there. A field given twice is a
// refusal naming it: Relay would route on one value while the upstream
// read another.
func formPart(body []byte, boundary, name string) (start, end int, err error) {
	delim := []byte("--" + boundary)
	// Readers that take a bare line feed for a line break (Go's among them)
	// would see parts where this reading sees none: refuse such a body
	// rather than route on a model the upstream may not read.
	for j := 0; ; {
		k := bytes.Index(body[j:], append([]byte("\n"), delim...))
		if k < 0 {
			break
		}
		if j+k == 0 || body[j+k-1] != '\r' {
			return 0, 0, formError("a boundary follows a bare line feed")
		}
		j += k + 1
	}
	// The first boundary starts the body or a line (after a preamble).
	i := 0
	if !bytes.HasPrefix(body, delim) {
		i = bytes.Index(body, append([]byte("\r\n"), delim...))
		if i < 0 {
			return 0, 0, formError("the body holds no part")
		}
		i += 2
	}
	start, end = -1, -1
	for {
		i += len(delim)
		if bytes.HasPrefix(body[i:], []byte("--")) {
			if start < 0 {
				return 0, 0, &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The form has no " + name + " field.", Param: name}
			}
			return start, end, nil
		}
		if !bytes.HasPrefix(body[i:], []byte("\r\n")) {
			return 0, 0, formError("a boundary is not followed by a line break")
		}
		i += 2
		var header []byte
		content := i + 2 // a part without headers
		if !bytes.HasPrefix(body[i:], []byte("\r\n")) {
			h := bytes.Index(body[i:], []byte("\r\n\r\n"))
			if h < 0 {
				return 0, 0, formError("a part's headers do not end")
			}
			header, content = body[i:i+h], i+h+4
		}
		if bareLF(header) {
			return 0, 0, formError("a part's headers hold a bare line feed")
		}
		// The closing line break of the headers may be the delimiter's own
		// (an empty part): look for the end from there.
		from := content - 2
		next := bytes.Index(body[from:], append([]byte("\r\n"), delim...))
		if next < 0 {
			return 0, 0, formError("the last part does not end with the closing boundary")
		}
		stop := from + next
		content = min(content, stop)
		if partName(header) == name {
			if start >= 0 {
				return 0, 0, &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The form gives the " + name + " field twice.", Param: name}
			}
			start, end = content, stop
		}
		i = stop + 2
	}
}

// partName is the form name of a part without a filename, from its
// Content-Disposition header; "" for a file part or none.
func partName(header []byte) string {
	for len(header) > 0 {
		line := header
		if j := bytes.Index(header, []byte("\r\n")); j >= 0 {
			line, header = header[:j], header[j+2:]
		} else {
			header = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(k), []byte("Content-Disposition")) {
			continue
		}
		d, params, err := mime.ParseMediaType(string(bytes.TrimSpace(v)))
		if err != nil || d != "form-data" {
			return ""
		}
		if _, file := params["filename"]; file {
			return ""
		}
		return params["name"]
	}
	return ""
}

// bareLF reports whether b holds a line feed not preceded by a carriage return.
func bareLF(b []byte) bool {
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

func formError(what string) error {
	return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "Could not parse the multipart form: " + what + "."}
}

// formBoundary is the boundary of a multipart/form-data Content-Type, or
// "" when the body is not one.
func formBoundary(contentType string) string {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" {
		return ""
	}
	b := params["boundary"]
	if len(b) == 0 || len(b) > 70 {
		return ""
	}
	return b
}

// readFormBody reads a multipart body: into rq.body when it is at most
// formInMemory bytes, else into an unlinked temporary file
// (rq.form.spilled). It reports false once it has answered the caller.
func (rq *request) readFormBody() bool {
	max := rq.h.maxBody
	if rq.r.ContentLength > max {
		rq.fail(wire.Errorf(wire.ErrRequestTooLarge, "The request body is larger than %d bytes.", max))
		return false
	}
	if n := min(rq.r.ContentLength, bodyHint); n > 0 {
		rq.body.Grow(int(n) + bytes.MinRead)
	}
	body := http.MaxBytesReader(rq.w, rq.r.Body, max)
	_, err := rq.body.ReadFrom(io.LimitReader(body, formInMemory+1))
	if err == nil && rq.body.Len() > formInMemory {
		var f *spill.File
		f, err = spill.New("", rq.body.Bytes(), body)
		rq.body.Reset()
		var tooBig *http.MaxBytesError
		switch {
		case f != nil:
			rq.form.spilled = f
		case !errors.As(err, &tooBig) && errors.Is(err, spill.ErrDisk):
			// The disk failed, not the caller: a 503, and the cause in the
			// log (a path and an errno, never the body).
			rq.h.log.Error("spilling a multipart body", "request_id", rq.id, "err", err)
			rq.fail(wire.Errorf(wire.ErrUnavailable, "Relay could not hold the upload; try again."))
			return false
		}
	}
	return rq.bodyRead(err, max)
}

// scanForm readies a multipart request for routing: it finds the model
// field and gives rq.scan a JSON stand-in naming it, so the router and
// the limiter see what they see of a JSON body. It reports false once it
// has answered the caller.
func (rq *request) scanForm(boundary string) bool {
	var start, end int
	var model string
	find := func(b []byte) (err error) {
		start, end, err = formPart(b, boundary, "model")
		if err == nil {
			model = string(b[start:end])
		}
		return err
	}
	var err error
	if sp := rq.form.spilled; sp != nil {
		// The file is closed when serveForm returns: what the record needs
		// of the body later (its image units, its captured head) is read now.
		err = sp.Scan(func(b []byte) error {
			if err := find(b); err != nil {
				return err
			}
			switch rq.in {
			case wire.InboundImageEdits, wire.InboundImageVariations:
				u := imageUnits(b, boundary)
				rq.form.units = &u
			}
			if rq.cw != nil {
				rq.form.head = bytes.Clone(b[:min(len(b), rq.cw.limit)])
			}
			return nil
		})
	} else {
		err = find(rq.body.Bytes())
	}
	if err != nil {
		rq.fail(err)
		return false
	}
	rq.form.boundary, rq.form.modelStart, rq.form.modelEnd = boundary, start, end
	stand := strconv.AppendQuote([]byte(`{"model":`), model)
	stand = append(stand, '}')
	rq.scan, err = wire.ScanRequest(stand)
	if err != nil {
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The form's model field is not a model name.", Param: "model"})
		return false
	}
	return true
}

// formState is a multipart request's: its boundary, where the model
// value sits in the body and, for a body too large to keep in memory, the
// file that holds it and the model value the next attempt sends.
type formState struct {
	boundary             string
	modelStart, modelEnd int
	spilled              *spill.File
	upModel              string
	units                *wire.Units // a spilled image form's
	head                 []byte      // a spilled form's first bytes, when captured
}

// formBody is the caller's form with the binding's upstream model as the
// model field's value; nil for a spilled form, whose attempts read the
// file (spilledBody).
func (rq *request) formBody(upstreamModel string) []byte {
	if rq.form.spilled != nil {
		rq.form.upModel = upstreamModel
		return nil
	}
	body := rq.body.Bytes()
	if string(body[rq.form.modelStart:rq.form.modelEnd]) == upstreamModel {
		return body
	}
	if rq.sending.Load() > 0 {
		rq.upBody = nil // an earlier attempt's body may still be on the wire
	}
	up := append(rq.upBody[:0], body[:rq.form.modelStart]...)
	up = append(up, upstreamModel...)
	up = append(up, body[rq.form.modelEnd:]...)
	rq.upBody = up
	return up
}

// setSpilledBody gives req the spilled form with the attempt's upstream
// model: the caller's bytes before the model value, the value, the bytes
// after it, read from the file afresh for each body the transport asks
// for. A transport still reading once the request is over (and the file
// closed) reads an error, never another request's bytes.
func (rq *request) setSpilledBody(req *http.Request) {
	sp, start, end, model := rq.form.spilled, int64(rq.form.modelStart), int64(rq.form.modelEnd), rq.form.upModel
	sending := rq.sending
	open := func() io.ReadCloser {
		sending.Add(1)
		return io.NopCloser(io.MultiReader(sp.Section(0, start), strings.NewReader(model), sp.Section(end, sp.Size()-end)))
	}
	req.ContentLength = sp.Size() - (end - start) + int64(len(model))
	req.Body = open()
	req.GetBody = func() (io.ReadCloser, error) { return open(), nil }
}

// serveForm serves a multipart request: the model from the form, the
// rest as for a JSON body (no route facts: a form has no prompt to hash
// and no tools or images for routing to weigh).
func (h *Handler) serveForm(rq *request, boundary string) {
	if !rq.readFormBody() {
		return
	}
	if sp := rq.form.spilled; sp != nil {
		defer sp.Close()
	}
	if !rq.scanForm(boundary) {
		return
	}
	rq.stream = false
	h.routeAndForward(rq, &wire.RouteFacts{})
}
