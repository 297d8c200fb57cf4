package respstore_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/respstore"
)

// BenchmarkRedis_Turn is one stateful turn's store traffic on a real
// Redis: the Load of the previous response and two referenced items, then
// the Put of the answer (a 10-item, ~8 KiB record).
func BenchmarkRedis_Turn(b *testing.B) {
	rc, err := ratelimit.NewRedisClient(redistest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	s := respstore.NewRedis(rc, redistest.Prefix(b), respstore.Limits{}, nil)
	ctx := b.Context()
	items := make([]string, 10)
	for i := range items {
		items[i] = fmt.Sprintf("msg_%d", i)
	}
	rec := func(id string) *respstore.Record {
		var its []json.RawMessage
		for i := range items {
			its = append(its, item(items[i], strings.Repeat("w", 800)))
		}
		return record(id, its...)
	}
	if err := s.Put(ctx, "p", rec("resp_0")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Load(ctx, "p", fmt.Sprintf("resp_%d", i), items[:2]); err != nil {
			b.Fatal(err)
		}
		if err := s.Put(ctx, "p", rec(fmt.Sprintf("resp_%d", i+1))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedis_ConversationTurn is one turn's conversation traffic on a
// real Redis: the read of a 10-item (~8 KiB) conversation, then the append
// of the turn's input and output (two ~800-byte items). Each iteration
// works on a conversation of its own, so the figure is not that of one
// ever-growing conversation.
func BenchmarkRedis_ConversationTurn(b *testing.B) {
	rc, err := ratelimit.NewRedisClient(redistest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	s := respstore.NewRedis(rc, redistest.Prefix(b), respstore.Limits{}, nil)
	ctx := b.Context()
	text := strings.Repeat("w", 800)
	var start []json.RawMessage
	for i := range 10 {
		start = append(start, item(fmt.Sprintf("msg_%d", i), text))
	}
	for i := range b.N {
		if err := s.CreateConversation(ctx, "p", &respstore.Conversation{ID: fmt.Sprintf("conv_%d", i)}, start); err != nil {
			b.Fatal(err)
		}
	}
	turn := []json.RawMessage{item("msg_in", text), item("msg_out", text)}
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("conv_%d", i)
		st, err := s.GetConversation(ctx, "p", id, true)
		if err != nil || len(st.Items) != 10 {
			b.Fatal(err)
		}
		if err := s.AppendItems(ctx, "p", id, turn); err != nil {
			b.Fatal(err)
		}
	}
}
