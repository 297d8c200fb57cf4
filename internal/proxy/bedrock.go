package proxy

import (
	"io"
	"mime"
	"net/http"

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
