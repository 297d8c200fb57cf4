// Package batching is how Relay's background writers (usage events,
// payload captures) turn a queue into batches: one loop that fills a batch
// from a channel and hands it on when it is full, when it has waited long
// enough, and once more when the writer closes. It owns no goroutine and
// no state; the writer runs Gather on its own goroutine and decides what
// flushing means (a write, a hand-off, a spill).
package batching

import "time"

// Gather appends what arrives on in to *batch and calls flush when the batch
// holds size items and on every tick of interval. Once quit is closed it
// drains in without waiting, flushes once more and returns. flush is called
// with *batch possibly empty; it must leave *batch empty, or replace it.
func Gather[T any](in <-chan T, quit <-chan struct{}, size int, interval time.Duration, batch *[]T, flush func()) {
	add := func(v T) {
		*batch = append(*batch, v)
		if len(*batch) >= size {
			flush()
		}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case v := <-in:
			add(v)
		case <-tick.C:
			flush()
		case <-quit:
			for {
				select {
				case v := <-in:
					add(v)
					continue
				default:
				}
				break
			}
			flush()
			return
		}
	}
}
