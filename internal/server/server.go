// Package server runs Relay's two listeners — the inference plane and the
// control plane — with their health endpoints, the limits a client cannot
// stretch (header, body and idle timeouts, a cap on connections per plane),
// and a graceful shutdown: readiness flips to 503 first and the listeners
// keep serving for the drain delay, so a load balancer takes the pod out of
// rotation, then in-flight requests (streams included) drain for up to the
// shutdown timeout. It knows nothing of what the planes serve; their
// handlers are passed in.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
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
	InferenceAddr string
	ControlAddr   string
	Inference     http.Handler // serves everything on the inference plane but the health endpoints
	Control       http.Handler // serves everything on the control plane but the health endpoints
	Status        Status
	// ControlCheck says why the control plane cannot do its work (Postgres
	// unreachable), nil when it can; the control plane's /readyz answers
	// 503 with the reason. The inference plane serves from the snapshot and
	// does not ask. nil: no check.
	ControlCheck func(context.Context) error
	Limits       Limits
	// DrainDelay is how long /readyz answers 503 before the listeners stop
	// accepting, while they still serve: a load balancer's time to notice.
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
	// OnListening is called with both bound addresses once they accept connections.
	OnListening func(inference, control net.Addr)
	// After waits out the drain delay; nil: time.After. Tests end it at will.
	After func(time.Duration) <-chan time.Time
	// TLSCertFile and TLSKeyFile, both set, serve both planes over TLS (tls.go).
	TLSCertFile, TLSKeyFile string
	// TrustedProxies are the peers whose X-Forwarded-For/-Proto are believed (forwarded.go).
	TrustedProxies []netip.Prefix
}

// Server is the pair of listeners.
type Server struct {
	opts      Options
	draining  atomic.Bool
	listeners []*limitListener // inference, control; set by Listen
	fitted    bool             // Listen lowered the default connection cap to the open-file limit
	check     checkCache
	tls       *tls.Config // nil: plain HTTP; set by Listen
}

// New makes a Server.
func New(opts Options) *Server {
	opts.Limits = opts.Limits.withDefaults()
	if opts.After == nil {
		opts.After = time.After
	}
	return &Server{opts: opts, check: checkCache{check: opts.ControlCheck}}
}

// Connections returns the connections each plane holds open now.
func (s *Server) Connections() (inference, control int) {
	if s.listeners == nil {
		return 0, 0
	}
	return int(s.listeners[0].open.Load()), int(s.listeners[1].open.Load())
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}`)) // the client may be gone
}

type readiness struct {
	Status          string  `json:"status"`
	Reason          string  `json:"reason,omitempty"`
	SnapshotVersion uint64  `json:"snapshot_version"`
	SnapshotAge     float64 `json:"snapshot_age_seconds"`
}

// readyz answers for one plane; control adds the ControlCheck.
func (s *Server) readyz(control bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := s.opts.Status
		body := readiness{Status: "ready", SnapshotVersion: st.Version(), SnapshotAge: st.Age().Seconds()}
		code := http.StatusOK
		switch {
		case s.draining.Load():
			body.Status, code = "draining", http.StatusServiceUnavailable
		case !st.Ready():
			body.Status, code = "loading", http.StatusServiceUnavailable
		case control:
			if err := s.check.run(r.Context()); err != nil {
				body.Status, body.Reason, code = "database_unavailable", err.Error(), http.StatusServiceUnavailable
				w.Header().Set("Retry-After", "5")
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body) // the client may be gone
	}
}

// checkCache runs the control plane's check at most once a second, however
// often /readyz is asked (it is unauthenticated).
type checkCache struct {
	check func(context.Context) error

	mu   sync.Mutex
	at   time.Time // guarded by mu
	last error     // guarded by mu
}

func (c *checkCache) run(ctx context.Context) error {
	if c.check == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < time.Second {
		return c.last
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c.last, c.at = c.check(ctx), time.Now()
	return c.last
}

func (s *Server) mux(rest http.Handler, control bool) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /readyz", s.readyz(control))
	if rest != nil {
		m.Handle("/", withBodyTimeout(s.opts.Limits.BodyTimeout, s.opts.Limits.BodyDeadline, rest))
	}
	return s.framing(m, control)
}

// framing applies the framing rules of framing.go to a plane's handler:
// the header-field bound on the inference plane, the close after a
// request framed twice on both.
func (s *Server) framing(h http.Handler, control bool) http.Handler {
	n := s.opts.Limits.MaxHeaders
	if control {
		n = 0
	}
	return withFraming(n, h)
}

// framed is the listener a plane serves: its connections note their
// framing and answer net/http's own framing errors in JSON.
func framed(ln net.Listener) net.Listener { return frameListener{ln} }

// filesNeeded is how many open files the connection caps may take: each
// inference connection may hold an upstream one too, and 256 for the rest.
func filesNeeded(l Limits) uint64 {
	return uint64(2*l.MaxConnections + l.ControlMaxConnections + 256)
}

// fitFileLimit lowers the inference connection cap to what n open files
// allow when the cap is the default, which means "as many as this machine
// takes, up to DefaultMaxConnections"; a cap the operator set is kept (Run
// warns when it does not fit). It reports whether it lowered the cap.
func fitFileLimit(l Limits, n uint64) (Limits, bool) {
	if l.MaxConnections != DefaultMaxConnections || filesNeeded(l) <= n {
		return l, false
	}
	spare := int64(n) - int64(l.ControlMaxConnections) - 256
	l.MaxConnections = int(max(64, spare/2))
	return l, true
}

// Listen binds both addresses (Run does it when it was not called), so a
// caller can learn the bound ports before serving.
func (s *Server) Listen() (inference, control net.Addr, err error) {
	if err := s.loadTLS(); err != nil {
		return nil, nil, err
	}
	inLn, err := net.Listen("tcp", s.opts.InferenceAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on inference address %s: %w", s.opts.InferenceAddr, err)
	}
	ctlLn, err := net.Listen("tcp", s.opts.ControlAddr)
	if err != nil {
		inLn.Close()
		return nil, nil, fmt.Errorf("listen on control address %s: %w", s.opts.ControlAddr, err)
	}
	if n, ok := fileLimit(); ok {
		s.opts.Limits, s.fitted = fitFileLimit(s.opts.Limits, n)
	}
	lim := s.opts.Limits
	s.listeners = []*limitListener{newLimitListener(inLn, lim.MaxConnections), newLimitListener(ctlLn, lim.ControlMaxConnections)}
	return inLn.Addr(), ctlLn.Addr(), nil
}

func (s *Server) httpServer(h http.Handler, control bool) *http.Server {
	lim := s.opts.Limits
	srv := &http.Server{
		Handler:           Forwarded(s.opts.TrustedProxies, h),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
		ConnContext:       withConn,
	}
	if !control {
		// net/http allows 4 KiB past this before it answers 431.
		srv.MaxHeaderBytes = lim.MaxHeaderBytes
	}
	return srv
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
	lim := s.opts.Limits
	if n, ok := fileLimit(); ok && s.fitted {
		log.Info("the inference connection cap is sized to the open-file limit; raise the limit (ulimit -n) for more",
			"open_file_limit", n, "max_connections", lim.MaxConnections)
	} else if ok && filesNeeded(lim) > n {
		// Each inference connection may hold an upstream one too.
		log.Warn("the open-file limit is below what the connection caps may need; raise it (ulimit -n) or lower RELAY_MAX_CONNECTIONS",
			"open_file_limit", n, "max_connections", lim.MaxConnections, "control_max_connections", lim.ControlMaxConnections)
	}
	servers := []*http.Server{s.httpServer(s.mux(s.opts.Inference, false), false), s.httpServer(s.mux(s.opts.Control, true), true)}
	errc := make(chan error, 2)
	for i := range servers {
		go func() {
			if err := s.serve(servers[i], s.listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	// Start-up is over: hand back to the OS what it used and let go of (the
	// OpenAPI document's YAML, a bootstrap password's argon2 memory), which
	// the runtime would otherwise keep resident for minutes.
	debug.FreeOSMemory()
	inAddr, ctlAddr := s.listeners[0].Addr(), s.listeners[1].Addr()
	log.Info("listening", "inference", inAddr.String(), "control", ctlAddr.String())
	if s.opts.OnListening != nil {
		s.opts.OnListening(inAddr, ctlAddr)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.draining.Store(true)
	if runErr == nil && s.opts.DrainDelay > 0 {
		log.Info("draining: /readyz answers 503 while the listeners still serve", "delay", s.opts.DrainDelay)
		select {
		case <-s.opts.After(s.opts.DrainDelay):
		case runErr = <-errc:
		}
	}
	log.Info("shutting down; finishing in-flight requests", "timeout", s.opts.ShutdownTimeout)
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
