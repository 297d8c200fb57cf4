// Package server runs Relay's two listeners — the inference plane and the
// control plane — with their health endpoints, and shuts them down gracefully:
// readiness flips to 503 first, then in-flight requests (streams included)
// drain for up to the shutdown timeout. It knows nothing of what the planes
// serve; their handlers are passed in.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Status reports the snapshot's state for /readyz.
type Status interface {
	Ready() bool
	Version() uint64
	Age() time.Duration
}

// Options configure a Server.
type Options struct {
	InferenceAddr   string
	ControlAddr     string
	Inference       http.Handler // serves everything on the inference plane but the health endpoints
	Control         http.Handler // serves everything on the control plane but the health endpoints
	Status          Status
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
	// OnListening is called with both bound addresses once they accept connections.
	OnListening func(inference, control net.Addr)
}

// Server is the pair of listeners.
type Server struct {
	opts      Options
	draining  atomic.Bool
	listeners []net.Listener // inference, control; set by Listen
}

// New makes a Server.
func New(opts Options) *Server { return &Server{opts: opts} }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}`)) //nolint:errcheck // the client may be gone
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	st := s.opts.Status
	body := struct {
		Status          string  `json:"status"`
		SnapshotVersion uint64  `json:"snapshot_version"`
		SnapshotAge     float64 `json:"snapshot_age_seconds"`
	}{Status: "ready", SnapshotVersion: st.Version(), SnapshotAge: st.Age().Seconds()}
	code := http.StatusOK
	switch {
	case s.draining.Load():
		body.Status, code = "draining", http.StatusServiceUnavailable
	case !st.Ready():
		body.Status, code = "loading", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body) //nolint:errcheck // the client may be gone
}

func (s *Server) mux(rest http.Handler) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /readyz", s.readyz)
	if rest != nil {
		m.Handle("/", rest)
	}
	return m
}

// Listen binds both addresses (Run does it when it was not called), so a
// caller can learn the bound ports before serving.
func (s *Server) Listen() (inference, control net.Addr, err error) {
	inLn, err := net.Listen("tcp", s.opts.InferenceAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on inference address %s: %w", s.opts.InferenceAddr, err)
	}
	ctlLn, err := net.Listen("tcp", s.opts.ControlAddr)
	if err != nil {
		inLn.Close()
		return nil, nil, fmt.Errorf("listen on control address %s: %w", s.opts.ControlAddr, err)
	}
	s.listeners = []net.Listener{inLn, ctlLn}
	return inLn.Addr(), ctlLn.Addr(), nil
}

// Run serves until ctx ends, then drains and returns. A listener that fails
// to bind is an error before anything is served.
func (s *Server) Run(ctx context.Context) error {
	log := s.opts.Logger
	if s.listeners == nil {
		if _, _, err := s.Listen(); err != nil {
			return err
		}
	}
	inLn, ctlLn := s.listeners[0], s.listeners[1]
	servers := []*http.Server{
		{Handler: s.mux(s.opts.Inference), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		{Handler: s.mux(s.opts.Control), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
	}
	listeners := []net.Listener{inLn, ctlLn}
	errc := make(chan error, 2)
	for i := range servers {
		go func() {
			if err := servers[i].Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	log.Info("listening", "inference", inLn.Addr().String(), "control", ctlLn.Addr().String())
	if s.opts.OnListening != nil {
		s.opts.OnListening(inLn.Addr(), ctlLn.Addr())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.draining.Store(true)
	log.Info("shutting down; draining in-flight requests", "timeout", s.opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(sctx); err != nil {
				log.Warn("drain cut short", "err", err)
				srv.Close()
			}
		}()
	}
	wg.Wait()
	return runErr
}
