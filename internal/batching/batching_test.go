package batching

import (
	"slices"
	"testing"
	"time"
)

// A full batch goes at once; on quit the queue is drained and the rest
// flushed, with nothing lost and nothing twice.
func TestGather_FullBatchesThenTheRestOnQuit(t *testing.T) {
	t.Parallel()
	in := make(chan int, 10)
	quit := make(chan struct{})
	for i := range 7 {
		in <- i
	}
	close(quit)
	var flushed [][]int
	batch := make([]int, 0, 3)
	Gather(in, quit, 3, time.Hour, &batch, func() {
		if len(batch) > 0 {
			flushed = append(flushed, slices.Clone(batch))
			batch = batch[:0]
		}
	})
	want := [][]int{{0, 1, 2}, {3, 4, 5}, {6}}
	if !slices.EqualFunc(flushed, want, slices.Equal) {
		t.Fatalf("flushed %v, want %v", flushed, want)
	}
}

// A partial batch goes on the tick, without waiting for quit.
func TestGather_PartialBatchOnTheTick(t *testing.T) {
	t.Parallel()
	in := make(chan int, 1)
	quit := make(chan struct{})
	got := make(chan []int, 1)
	done := make(chan struct{})
	batch := []int(nil)
	go func() {
		defer close(done)
		Gather(in, quit, 100, time.Millisecond, &batch, func() {
			if len(batch) > 0 {
				got <- slices.Clone(batch)
				batch = nil
			}
		})
	}()
	in <- 42
	select {
	case b := <-got:
		if !slices.Equal(b, []int{42}) {
			t.Errorf("flushed %v", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a partial batch never flushed on the tick")
	}
	close(quit)
	<-done
}
