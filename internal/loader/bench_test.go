package loader

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// BenchmarkPropagation measures NOTIFY-to-swap: a write committed on one
// connection until a loader on another pool (as another pod would) publishes
// a snapshot containing it. The debounce is 1ns here, so the figure is the
// mechanism alone; the default debounce (1s) adds to it in production.
func BenchmarkPropagation(b *testing.B) {
	url := pgtest.NewDB(b)
	bb := &bundle{url: url, st: openStoreB(b, url), box: nil}
	key, _ := newBoxKey()
	bb.box = key
	swaps := make(chan *snapshot.Snapshot, 1024)
	l := New(openStoreB(b, url), bb.box, quiet(), Options{
		Debounce: time.Nanosecond,
		OnSwap:   func(s *snapshot.Snapshot) { swaps <- s },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-swaps // the first full load

	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("m-%d", i)
		if _, err := bb.st.Pool().Exec(context.Background(), `INSERT INTO models (name) VALUES ($1)`, name); err != nil {
			b.Fatal(err)
		}
		for s := range swaps {
			if s.ModelByName(name) != nil {
				break
			}
		}
	}
}
