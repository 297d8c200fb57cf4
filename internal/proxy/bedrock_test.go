package proxy

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/eventstream"
	"github.com/relay-llm/relay/internal/wire"
)

func TestUnframeEventStream(t *testing.T) {
	chunk := func(inner string) []byte {
		b, _ := eventstream.Append(nil, eventstream.Message{Headers: []eventstream.Header{
			eventstream.StringHeader(":event-type", "chunk"), eventstream.StringHeader(":message-type", "event"),
		}, Payload: []byte(`{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(inner)) + `"}`)})
		return b
	}
	resp := &http.Response{Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, Body: io.NopCloser(bytes.NewReader(chunk(`{"type":"message_stop"}`)))}
	unframeEventStream(resp, wire.ShapeAnthropic)
	got, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || string(got) != "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" {
		t.Fatalf("%q %q", resp.Header.Get("Content-Type"), got)
	}
	plain := &http.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader([]byte(`{}`)))}
	unframeEventStream(plain, wire.ShapeAnthropic)
	if b, _ := io.ReadAll(plain.Body); string(b) != "{}" {
		t.Fatalf("a JSON answer changed: %q", b)
	}
}

func TestSigV4ClockSkew(t *testing.T) {
	got := sigV4ClockSkew([]byte(`{"message":"Signature expired: 20260301T090000Z is now earlier than 20261202T071500Z (20261202T072000Z - 5 min.)"}`))
	if !strings.Contains(got, "Relay's clock is more than 5 minutes off AWS's") || !strings.Contains(got, "Signature expired: 20260301T090000Z") {
		t.Fatalf("%q", got)
	}
	if got := sigV4ClockSkew([]byte(`{"message":"The security token included in the request is invalid."}`)); got != "" {
		t.Fatalf("%q", got)
	}
}
