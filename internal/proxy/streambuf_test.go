package proxy

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// TestStreamBufs_ReleasedWhileIdle: streams the upstream keeps quiet after
// their first event hold no read buffer — the handler counts those it
// lent, and they all come back while the streams stay open.
func TestStreamBufs_ReleasedWhileIdle(t *testing.T) {
	const key = "sk-wr-streambuf"
	up := httptest.NewServer(mockupstream.New(mockupstream.Options{Record: -1}))
	t.Cleanup(up.Close)
	id := func(n byte) uuid.UUID { return uuid.UUID{0x5b, n} }
	policy := &snapshot.Policy{ID: id(1), AllModels: true, AllHostKeys: true}
	snap := snapshot.Build(&snapshot.Data{
		Projects:        []*snapshot.Project{{ID: id(2)}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: id(3), ProjectID: id(2), PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: id(4), ProjectID: id(2), ServiceAccountID: id(3), Hash: sha256.Sum256([]byte(key))}},
		Hosts:           []*snapshot.Host{{ID: id(5), Slug: "mock", BaseURL: up.URL, Enabled: true}},
		HostKeys:        []*snapshot.HostKey{{ID: id(6), HostID: id(5), Slug: "k", Secret: snapshot.NewSecret("sk-up"), SecretVersion: 1, Enabled: true, Usable: true}},
		Models:          []*snapshot.Model{{ID: id(7), Name: "gpt-stall"}},
		Bindings:        []*snapshot.Binding{{ID: id(8), ModelID: id(7), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini-fault-stall-1", Enabled: true}},
	}, 1, time.Now())
	h := New(Config{Snapshot: func() *snapshot.Snapshot { return snap }})
	relay := httptest.NewServer(h)
	t.Cleanup(relay.Close)

	const streams = 20
	body := `{"model":"gpt-stall","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for range streams {
		c, err := net.Dial("tcp", relay.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
		br := bufio.NewReader(c)
		blank := 0
		for blank < 2 { // the head, then the first event
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "\r\n" || line == "\n" {
				blank++
			}
		}
	}
	poll.Until(t, 10*time.Second, "the quiet streams give their read buffers back", func() bool { return h.streamBufs.lent.Load() == 0 })
}
