package proxy

import (
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/relay-llm/relay/internal/eventstream"
	"github.com/relay-llm/relay/internal/wire"
)

// eventStreamType is the media type of AWS event-stream bodies: Bedrock's
// ConverseStream and InvokeModelWithResponseStream answers.
const eventStreamType = "application/vnd.amazon.eventstream"

// unframeEventStream gives an event-stream answer the SSE view the rest
// of the proxy reads streams in (eventstream.SSEReader): ConverseStream's
// messages become named events for the bedrock_converse translator; an
// anthropic binding's InvokeModelWithResponseStream chunks become the
// Anthropic events they carry, so a Messages caller's stream passes
// through as if Anthropic had sent it. Any other answer is left alone.
func unframeEventStream(resp *http.Response, shape wire.Shape) {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != eventStreamType {
		return
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{eventstream.NewSSEReader(resp.Body, shape == wire.ShapeAnthropic), resp.Body}
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.ContentLength = -1
}

// sigV4ClockSkew names, for the caller and the log, an AWS refusal of a
// signature's date — "Signature expired: …" or "Signature not yet
// current: …" — which means Relay's clock is more than five minutes off
// AWS's, not that the host key is bad; "" for any other body.
func sigV4ClockSkew(body []byte) string {
	v, _ := wire.Get(body, "message")
	s, _ := wire.Str(v)
	switch msg := string(s); {
	case strings.HasPrefix(msg, "Signature expired"), strings.HasPrefix(msg, "Signature not yet current"):
		return "signature date refused (" + cutRunes(msg, maxUpstreamMessage) + "): Relay's clock is more than 5 minutes off AWS's; check the pod's time sync"
	}
	return ""
}
