package main

import (
	"context"
	"log/slog"
)

// services are the components `relay serve` runs beside its listeners — the
// embedded Postgres, the store, tracing, the limiter, the usage and capture
// writers, the snapshot loader. Each is added once it is running, and stop
// stops them in reverse: what was started last, and may use what came
// before, stops first. (river's startstop, without the generality.)
type services struct {
	log  *slog.Logger
	list []service
}

type service struct {
	name string
	stop func(context.Context) error
}

// add records a running component and how to stop it. stop should return
// when ctx ends, whatever it has left undone.
func (s *services) add(name string, stop func(context.Context) error) {
	s.list = append(s.list, service{name: name, stop: stop})
}

// goRun runs fn in its own goroutine until stop cancels its context, and
// waits for it to return then. fn's context does not end with parent's:
// the signal that ends `relay serve` stops the listeners first, and the
// components keep working while in-flight requests drain.
func (s *services) goRun(parent context.Context, name string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("stopped on its own", "component", name, "err", err)
		}
	}()
	s.add(name, func(stop context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-stop.Done():
			return stop.Err()
		}
	})
}

// stop stops every component, the last added first, within ctx, and
// forgets them. A component that fails or runs out of time is logged and
// the next is stopped all the same.
func (s *services) stop(ctx context.Context) {
	for i := len(s.list) - 1; i >= 0; i-- {
		c := s.list[i]
		if err := c.stop(ctx); err != nil {
			s.log.Error("stop", "component", c.name, "err", err)
		}
	}
	s.list = nil
}

// noErr adapts a stop function without an error or a context.
func noErr(f func()) func(context.Context) error {
	return func(context.Context) error { f(); return nil }
}
