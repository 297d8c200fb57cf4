package cache

import (
	"context"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
)

func TestCache_FillLookupAndCount(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{t: time.Unix(5000, 0)}
	c := New(Config{Now: clock.now})
	if _, ok := c.Lookup(ctx, "k"); ok {
		t.Fatal("hit on an empty cache")
	}
	e := &Entry{Response: canonical.Response{ID: "r1", Parts: []canonical.Part{{Type: canonical.PartText, Text: "hi"}}, Usage: canonical.Usage{Input: 3, Output: 1}}, BindingID: modelA}
	if !c.Fill(ctx, "k", e, time.Minute, 0) {
		t.Fatal("fill")
	}
	clock.advance(10 * time.Second)
	got, ok := c.Lookup(ctx, "k")
	if !ok || got.Response.Parts[0].Text != "hi" || got.BindingID != modelA || got.Response.Usage.Input != 3 {
		t.Fatalf("lookup: %+v, %v", got, ok)
	}
	if age := c.Age(got); age != 10*time.Second {
		t.Errorf("age %v", age)
	}
	if c.Fill(ctx, "big", e, time.Minute, 10) {
		t.Error("an entry over max bytes was kept")
	}
	st := c.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Fills != 1 || st.TooLarge != 1 || st.FillBytes == 0 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
}
