package respstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/respstore"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// stores runs test over both implementations: the same behaviour in
// process memory and on a real Redis.
func stores(t *testing.T, limits respstore.Limits, test func(t *testing.T, s respstore.Store, c *clock)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		c := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
		test(t, respstore.NewMemory(limits, c.Now), c)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rc, err := ratelimit.NewRedisClient(redistest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		c := &clock{t: time.Now()}
		test(t, respstore.NewRedis(rc, redistest.Prefix(t), limits, c.Now), c)
	})
}

func item(id, text string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"type":"message","role":"user","content":%q}`, id, text))
}

func record(id string, items ...json.RawMessage) *respstore.Record {
	return &respstore.Record{ID: id, CreatedAt: 1, Model: "m", Response: json.RawMessage(`{"id":"` + id + `","object":"response"}`),
		Input: items[:len(items)-1], Output: items[len(items)-1:]}
}

func TestStore_KeepsLoadsAndDeletesPerProject(t *testing.T) {
	t.Parallel()
	stores(t, respstore.Limits{}, func(t *testing.T, s respstore.Store, _ *clock) {
		ctx := t.Context()
		if err := s.Put(ctx, "p1", record("resp_a", item("msg_in", "hi"), item("msg_out", "hello"))); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, "p1", "resp_a", []string{"msg_out", "msg_in", "msg_nope"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Response == nil || got.Response.ID != "resp_a" || len(got.Response.Input) != 1 || len(got.Items) != 2 ||
			!strings.Contains(string(got.Items["msg_out"]), "hello") {
			t.Fatalf("loaded %+v", got)
		}
		// Items resolve without the response too, from the newest holder.
		if err := s.Put(ctx, "p1", record("resp_b", item("msg_in", "hi"), item("msg_out", "hello"), item("msg_2", "again"))); err != nil {
			t.Fatal(err)
		}
		got, err = s.Load(ctx, "p1", "", []string{"msg_2", "msg_in"})
		if err != nil || got.Response != nil || len(got.Items) != 2 {
			t.Fatalf("items alone: %+v, %v", got, err)
		}
		// Another project sees nothing, and cannot delete.
		got, err = s.Load(ctx, "p2", "resp_a", []string{"msg_in"})
		if err != nil || got.Response != nil || len(got.Items) != 0 {
			t.Fatalf("another project loaded %+v, %v", got, err)
		}
		if err := s.Delete(ctx, "p2", "resp_a"); !errors.Is(err, respstore.ErrNotFound) {
			t.Fatalf("another project's delete: %v", err)
		}
		if err := s.Delete(ctx, "p1", "resp_a"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "p1", "resp_a"); !errors.Is(err, respstore.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		got, _ = s.Load(ctx, "p1", "resp_a", nil)
		if got.Response != nil {
			t.Fatal("a deleted response loads")
		}
		// resp_b still holds the items resp_a shared with it.
		got, _ = s.Load(ctx, "p1", "", []string{"msg_in"})
		if len(got.Items) != 1 {
			t.Fatalf("items after the delete: %+v", got)
		}
	})
}

func TestStore_Bounds(t *testing.T) {
	t.Parallel()
	t.Run("ttl", func(t *testing.T) {
		stores(t, respstore.Limits{TTL: time.Hour}, func(t *testing.T, s respstore.Store, c *clock) {
			ctx := t.Context()
			if err := s.Put(ctx, "p", record("resp_old", item("msg_old", "x"))); err != nil {
				t.Fatal(err)
			}
			c.Advance(2 * time.Hour)
			// A Put prunes what expired (Redis also expires the record key itself).
			if err := s.Put(ctx, "p", record("resp_new", item("msg_new", "y"))); err != nil {
				t.Fatal(err)
			}
			got, _ := s.Load(ctx, "p", "resp_old", []string{"msg_old"})
			if got.Response != nil || len(got.Items) != 0 {
				t.Fatalf("expired response loaded: %+v", got)
			}
			if got, _ := s.Load(ctx, "p", "resp_new", nil); got.Response == nil {
				t.Fatal("the new response is gone")
			}
		})
	})
	t.Run("per response", func(t *testing.T) {
		stores(t, respstore.Limits{MaxBytes: 1024}, func(t *testing.T, s respstore.Store, _ *clock) {
			ctx := t.Context()
			err := s.Put(ctx, "p", record("resp_big", item("msg_big", strings.Repeat("x", 2000))))
			if !errors.Is(err, respstore.ErrTooLarge) {
				t.Fatalf("put over the bound: %v", err)
			}
			got, _ := s.Load(ctx, "p", "resp_big", []string{"msg_big"})
			if got.Response == nil || got.Response.Dropped <= 1024 || got.Response.Input != nil || len(got.Items) != 0 {
				t.Fatalf("marker %+v", got.Response)
			}
		})
	})
	t.Run("per project", func(t *testing.T) {
		stores(t, respstore.Limits{ProjectMaxBytes: 3000}, func(t *testing.T, s respstore.Store, c *clock) {
			ctx := t.Context()
			for i := range 5 {
				c.Advance(time.Millisecond) // distinct creation times: eviction goes oldest first
				if err := s.Put(ctx, "p", record(fmt.Sprintf("resp_%d", i), item(fmt.Sprintf("msg_%d", i), strings.Repeat("x", 900)))); err != nil {
					t.Fatal(err)
				}
			}
			var kept []int
			for i := range 5 {
				if got, _ := s.Load(ctx, "p", fmt.Sprintf("resp_%d", i), nil); got.Response != nil {
					kept = append(kept, i)
				}
			}
			if fmt.Sprint(kept) != "[3 4]" && fmt.Sprint(kept) != "[2 3 4]" {
				t.Fatalf("kept %v: the newest should stay, the oldest go", kept)
			}
			if got, _ := s.Load(ctx, "p", "", []string{"msg_0"}); len(got.Items) != 0 {
				t.Fatal("an evicted response's item still resolves")
			}
			// Deleting frees room: the project's count follows.
			if err := s.Delete(ctx, "p", "resp_4"); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, "p", record("resp_5", item("msg_5", "small"))); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Load(ctx, "p", "resp_3", nil); got.Response == nil {
				t.Fatal("resp_3 evicted although a delete made room")
			}
		})
	})
}

func FuzzDecode(f *testing.F) {
	f.Add(respstore.Encode(record("resp_a", item("msg_a", "hi"), item("msg_b", "yo"))))
	f.Add([]byte(`{"id":"resp_x","dropped":5000}`))
	f.Add([]byte(`{"id":"","input":[1]}`))
	f.Add([]byte(`{"id":"r","output":["x"],"response":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := respstore.Decode(data)
		if err != nil {
			return
		}
		// What decodes survives a round trip.
		again, err := respstore.Decode(respstore.Encode(rec))
		if err != nil || again.ID != rec.ID || len(again.Input) != len(rec.Input) || len(again.Output) != len(rec.Output) {
			t.Fatalf("round trip: %+v, %v", again, err)
		}
	})
}
