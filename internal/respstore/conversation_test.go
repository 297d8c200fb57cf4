package respstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/respstore"
)

func itemIDsOf(items []json.RawMessage) string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = respstore.ItemID(it)
	}
	return strings.Join(ids, ",")
}

func TestConversations_KeepAppendEditAndDeletePerProject(t *testing.T) {
	t.Parallel()
	stores(t, respstore.Limits{}, func(t *testing.T, s respstore.Store, _ *clock) {
		ctx := t.Context()
		c := &respstore.Conversation{ID: "conv_a", CreatedAt: 7, Metadata: map[string]string{"topic": "weather"}}
		if err := s.CreateConversation(ctx, "p1", c, []json.RawMessage{item("msg_1", "hi"), item("msg_2", "there")}); err != nil {
			t.Fatal(err)
		}
		// Appends keep the order; an id held already is left as it is.
		if err := s.AppendItems(ctx, "p1", "conv_a", []json.RawMessage{item("msg_3", "a"), item("msg_1", "again"), item("msg_4", "b")}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetConversation(ctx, "p1", "conv_a", true)
		if err != nil {
			t.Fatal(err)
		}
		if ids := itemIDsOf(got.Items); ids != "msg_1,msg_2,msg_3,msg_4" || got.CreatedAt != 7 || got.Metadata["topic"] != "weather" {
			t.Fatalf("got %+v items %s", got.Conversation, ids)
		}
		if !strings.Contains(string(got.Items[0]), `"hi"`) {
			t.Errorf("an append replaced an item: %s", got.Items[0])
		}
		// Another project sees nothing, and can change nothing.
		if _, err := s.GetConversation(ctx, "p2", "conv_a", false); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("p2 get: %v", err)
		}
		if err := s.AppendItems(ctx, "p2", "conv_a", []json.RawMessage{item("msg_9", "x")}); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("p2 append: %v", err)
		}
		if _, err := s.UpdateConversation(ctx, "p2", "conv_a", nil); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("p2 update: %v", err)
		}
		if _, err := s.DeleteItem(ctx, "p2", "conv_a", "msg_1"); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("p2 delete item: %v", err)
		}
		if err := s.DeleteConversation(ctx, "p2", "conv_a"); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("p2 delete: %v", err)
		}
		// Metadata is replaced whole.
		up, err := s.UpdateConversation(ctx, "p1", "conv_a", map[string]string{"k": "v"})
		if err != nil || up.Metadata["k"] != "v" || up.Metadata["topic"] != "" || up.CreatedAt != 7 {
			t.Fatalf("update: %v %+v", err, up)
		}
		// One item goes; a missing one is ErrItemNotFound.
		if _, err := s.DeleteItem(ctx, "p1", "conv_a", "msg_2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteItem(ctx, "p1", "conv_a", "msg_2"); !errors.Is(err, respstore.ErrItemNotFound) {
			t.Errorf("second item delete: %v", err)
		}
		got, _ = s.GetConversation(ctx, "p1", "conv_a", true)
		if ids := itemIDsOf(got.Items); ids != "msg_1,msg_3,msg_4" {
			t.Errorf("after the item delete: %s", ids)
		}
		if err := s.DeleteConversation(ctx, "p1", "conv_a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetConversation(ctx, "p1", "conv_a", true); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("get after delete: %v", err)
		}
		if err := s.DeleteConversation(ctx, "p1", "conv_a"); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
	})
}

func TestConversations_Bounds(t *testing.T) {
	t.Parallel()
	stores(t, respstore.Limits{MaxBytes: 400, ProjectMaxBytes: 1000}, func(t *testing.T, s respstore.Store, c *clock) {
		ctx := t.Context()
		text := strings.Repeat("x", 100) // an item of ~160 bytes
		if err := s.CreateConversation(ctx, "p", &respstore.Conversation{ID: "conv_big"}, []json.RawMessage{item("a", text), item("b", text), item("c", text)}); !errors.Is(err, respstore.ErrTooLarge) {
			t.Errorf("create over the bound: %v", err)
		}
		if _, err := s.GetConversation(ctx, "p", "conv_big", false); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("a conversation over the bound was kept: %v", err)
		}
		for i := range 4 {
			id := fmt.Sprintf("conv_%d", i)
			if err := s.CreateConversation(ctx, "p", &respstore.Conversation{ID: id}, []json.RawMessage{item("a", text), item("b", text)}); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Second)
		}
		// An append over the bound adds nothing.
		if err := s.AppendItems(ctx, "p", "conv_3", []json.RawMessage{item("c", text)}); !errors.Is(err, respstore.ErrTooLarge) {
			t.Errorf("append over the bound: %v", err)
		}
		got, err := s.GetConversation(ctx, "p", "conv_3", true)
		if err != nil || len(got.Items) != 2 {
			t.Fatalf("after the refused append: %v %v", err, got)
		}
		// 4 × ~320 bytes is over the project's 1000: the least recently
		// changed went first.
		if _, err := s.GetConversation(ctx, "p", "conv_0", false); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("the oldest conversation was not evicted: %v", err)
		}
		for _, id := range []string{"conv_1", "conv_2", "conv_3"} {
			if _, err := s.GetConversation(ctx, "p", id, false); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
		// A change makes it the newest: conv_1 survives the next eviction.
		if err := s.AppendItems(ctx, "p", "conv_1", []json.RawMessage{item("z", "z")}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		if err := s.CreateConversation(ctx, "p", &respstore.Conversation{ID: "conv_4"}, []json.RawMessage{item("a", text), item("b", text)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetConversation(ctx, "p", "conv_1", false); err != nil {
			t.Errorf("the recently changed conversation was evicted: %v", err)
		}
		if _, err := s.GetConversation(ctx, "p", "conv_2", false); !errors.Is(err, respstore.ErrNotFound) {
			t.Errorf("conv_2 should have gone: %v", err)
		}
	})
}

func TestConversations_ExpireInMemory(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	s := respstore.NewMemory(respstore.Limits{TTL: time.Hour}, c.Now)
	ctx := t.Context()
	if err := s.CreateConversation(ctx, "p", &respstore.Conversation{ID: "conv_a"}, nil); err != nil {
		t.Fatal(err)
	}
	c.Advance(50 * time.Minute)
	if err := s.AppendItems(ctx, "p", "conv_a", []json.RawMessage{item("m", "x")}); err != nil {
		t.Fatal(err)
	}
	c.Advance(50 * time.Minute) // 100 minutes old, 50 since its last change
	if _, err := s.GetConversation(ctx, "p", "conv_a", true); err != nil {
		t.Fatalf("expired early: %v", err)
	}
	c.Advance(11 * time.Minute)
	if _, err := s.GetConversation(ctx, "p", "conv_a", true); !errors.Is(err, respstore.ErrNotFound) {
		t.Errorf("kept past its TTL: %v", err)
	}
}

func TestConversations_ExpireInRedis(t *testing.T) {
	t.Parallel()
	stores(t, respstore.Limits{TTL: 50 * time.Millisecond}, func(t *testing.T, s respstore.Store, _ *clock) {
		if _, ok := s.(*respstore.Redis); !ok {
			return // the memory case is above, on a clock
		}
		ctx := t.Context()
		if err := s.CreateConversation(ctx, "p", &respstore.Conversation{ID: "conv_a"}, []json.RawMessage{item("m", "x")}); err != nil {
			t.Fatal(err)
		}
		// Redis expires the keys itself: poll until it has (a loaded
		// machine may be slow), bounded by the test's deadline.
		for {
			if _, err := s.GetConversation(ctx, "p", "conv_a", true); errors.Is(err, respstore.ErrNotFound) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatal("the conversation never expired")
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

func FuzzDecodeConversation(f *testing.F) {
	f.Add([]byte(`{"id":"conv_a","created_at":1,"metadata":{"k":"v"}}`))
	f.Add([]byte(`{"id":"conv_a","metadata":null}`))
	f.Add([]byte(`{"id":"","metadata":{}}`))
	f.Add([]byte(`{"id":"conv_a","metadata":{"k":1}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := respstore.DecodeConversation(data)
		if err != nil {
			return
		}
		if c.ID == "" || c.Metadata == nil {
			t.Fatalf("decoded %+v", c)
		}
		// What it decoded survives the store's round trip.
		s := respstore.NewMemory(respstore.Limits{}, nil)
		if err := s.CreateConversation(t.Context(), "p", c, nil); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetConversation(t.Context(), "p", c.ID, false)
		if err != nil || got.ID != c.ID || len(got.Metadata) != len(c.Metadata) {
			t.Fatalf("round trip: %v %+v vs %+v", err, got, c)
		}
	})
}
