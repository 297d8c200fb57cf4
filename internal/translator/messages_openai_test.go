package translator

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

func TestGolden_MessagesOpenAI(t *testing.T) {
	t.Parallel()
	runGolden(t, "messages_openai")
}

func TestMessagesOpenAI_CassetteRequests(t *testing.T) {
	t.Parallel()
	cassetteRequestsThrough(t, &messagesOpenAI)
}

// cassetteRequestsThrough sends every real Anthropic request body of the
// cassettes (tool loops with tool_use, tool_result and is_error) through
// the pair to the mock upstream, which validates requests the way the
// provider does (a tool result must answer a call, …), and reads the
// answer back in the caller's shape.
func cassetteRequestsThrough(t *testing.T, p *pairSpec) {
	t.Helper()
	for _, x := range cassettes(t) {
		t.Run(x.name, func(t *testing.T) {
			req, err := Decode(wire.InboundMessages, x.request)
			if err != nil {
				t.Fatalf("decode %s: %v", x.request, err)
			}
			for _, stream := range []bool{false, true} {
				req.C.Stream = stream
				tr, _ := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "up-model", Host: "h"}, testNow)
				body, err := tr.AppendRequest(nil)
				if err != nil {
					t.Fatal(err)
				}
				hr, _ := http.NewRequest(http.MethodPost, wire.JoinURL(mockServer(), tr.Path()), bytes.NewReader(body))
				switch p.up {
				case wire.ShapeGemini:
					hr.Header.Set("X-Goog-Api-Key", "k")
				default:
					hr.Header.Set("Authorization", "Bearer k")
				}
				resp, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("stream %v: the upstream refused %s: %d %s", stream, body, resp.StatusCode, answer)
				}
				out, usage := translateAnswer(t, p, req, caseMeta{}, 200, answer)
				validateCaller(t, wire.InboundMessages, stream, 200, out)
				if usage.Input == 0 || usage.Output == 0 {
					t.Errorf("usage %+v", usage)
				}
			}
		})
	}
}
