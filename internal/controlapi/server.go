// Package controlapi serves Relay's control API under /api on the control
// plane: CRUD of every kind through the store, sign-in (sessions with CSRF
// tokens, the admin bearer), role-based access control (internal/rbac),
// relay-key and inference-token minting, host-key sealing and the
// operational endpoints. It implements the strict-server interface generated
// from openapi/control.yaml and validates every request against that spec.
//
// It owns the HTTP face of the control plane and nothing on the inference
// path: it never touches the snapshot except through the narrow Snapshot
// interface (version, age, reload), and writes reach the inference plane only
// through Postgres and its NOTIFY.
package controlapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/controlgen"
)

// Snapshot is what the control API sees of this pod's snapshot loader
// (*loader.Loader satisfies it). When the value also has
// Load(context.Context) error, POST /api/snapshot/reload rebuilds through it
// and answers once the new snapshot is in place; otherwise it asks for a
// reload and waits (up to ReloadWait) for the version to move. When it has
// Listening() bool, GET /api/status reports it as listener_connected.
type Snapshot interface {
	Version() uint64
	Age() time.Duration
	RequestReload()
}

// BreakerState is one hold of the breakers, as GET /api/breakers shows it:
// a host key's own (Model "") or a host key's for one upstream model.
// State is closed, open or half_open; Hold is the implementation's own
// state (open, half_open, cooling, auth_failed, quota_exhausted).
// HostID may be left zero: the handler fills it in from the store.
type BreakerState struct {
	HostKeyID           uuid.UUID
	HostID              uuid.UUID
	SecretVersion       int32
	Model               string // "": the key's own hold
	State               string
	Hold                string
	ConsecutiveFailures int32
	Reason              string    // the last failure, secret-free
	OpenedAt            time.Time // zero: not open
	RetryAt             time.Time // zero: none
}

// BreakerClearer closes the holds of one host key (all of them, or with a
// model that upstream model's only) on every pod, and returns what it closed.
type BreakerClearer func(ctx context.Context, hostKeyID uuid.UUID, model string) ([]BreakerState, error)

// HostKeyTestResult is the outcome of one test call with a host key. A host
// that answered with an error is a result (OK false, UpstreamStatus set), not
// an error. Message must never contain the secret.
type HostKeyTestResult struct {
	OK             bool
	UpstreamStatus int // 0: no response (connection error, timeout, unset variable)
	Latency        time.Duration
	Message        string
}

// HostKeyTester makes one cheap authenticated call to a host key's host.
type HostKeyTester func(ctx context.Context, hostKeyID uuid.UUID) (HostKeyTestResult, error)

// Config wires a control API handler. Store, Box and Logger are required.
type Config struct {
	Store      *store.Store
	Box        *secret.Box // seals host key values; without a master key only env: references work
	AdminToken string      // RELAY_ADMIN_TOKEN; empty turns the admin bearer off
	// AdminTokenExpires (RELAY_ADMIN_TOKEN_EXPIRES) ends AdminToken; zero: never.
	AdminTokenExpires time.Time
	// AdminTokenFile (RELAY_ADMIN_TOKEN_FILE) holds the admin token instead
	// of AdminToken, re-read when it changes; the token it held before is
	// accepted for AdminTokenGrace more (0: 10 minutes).
	AdminTokenFile  string
	AdminTokenGrace time.Duration
	// Egress refuses base URLs at Relay's own listeners, metadata addresses
	// and what RELAY_UPSTREAM_ALLOW leaves out; nil: egress.New(nil).
	Egress *egress.Guard
	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now

	Snapshot      Snapshot              // nil: status reports version 0 and reload is 501
	Breakers      func() []BreakerState // nil: no breakers
	ClearBreakers BreakerClearer        // nil: DELETE /api/breakers is 501
	PurgeCache    CachePurger           // nil: the response cache purges are 501
	HostKeyTester HostKeyTester         // nil: POST /api/host-keys/{id}/test is 501
	// Explain routes a request as this process's inference plane would,
	// for POST /api/route/explain and the console (planes.Explainer in
	// relay serve: the router with what the proxy supports and its live
	// figures). nil: explaining answers 501. The control plane takes it as
	// a value so that it never links the router.
	Explain Explainer
	// Objects is the index of upstream objects the inference plane writes
	// (the same value the proxy has), read by GET /api/projects/{id}/objects;
	// nil: that answers 501.
	Objects     objects.Index
	PacingQueue func() int64 // requests waiting for rate-limit budget now (relay_pacing_queue_length); nil: the console shows none

	SecureCookies bool          // set Secure on the session cookie (TLS in front)
	SessionTTL    time.Duration // 0: 12 hours
	PodName       string        // pod_id in status; empty: the hostname
	Version       string        // Relay's build version, for status
	StartedAt     time.Time     // when this process started; zero: when New ran
	ReloadWait    time.Duration // 0: 10 s; see Snapshot

	// LoginAttempts failed sign-ins per email within LoginWindow answer 429
	// until the window ends. Zero values: 10 attempts per 15 minutes.
	LoginAttempts int
	LoginWindow   time.Duration
	// LoginHashes password checks (argon2id, 19 MiB each) run at once; a
	// sign-in waits up to LoginWait for one to finish, then answers 429.
	// Zero values: a quarter of the CPUs (at least 1) — the rest stay with
	// the inference plane — and 2 seconds.
	LoginHashes int
	LoginWait   time.Duration
}

// Server implements the strict-server interface of the control API.
type Server struct {
	cfg       Config
	st        *store.Store
	log       *slog.Logger
	now       func() time.Time
	router    routers.Router
	api       http.Handler
	logins    *loginThrottle
	passwords *passwordChecker
	origins   *http.CrossOriginProtection // CheckOrigin
	admin     *adminTokens
	svc       *Service
}

var _ controlgen.StrictServerInterface = (*Server)(nil)

// maxBody caps a request body; the largest legitimate one is a host key
// secret (8 KiB) or a rate limit with 50 rules.
const maxBody = 1 << 20

// New returns the handler of /api/... for the control plane listener.
func New(cfg Config) (http.Handler, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newServer(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("controlapi: Store is required")
	}
	if cfg.Box == nil {
		return nil, errors.New("controlapi: Box is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.ReloadWait <= 0 {
		cfg.ReloadWait = 10 * time.Second
	}
	if cfg.StartedAt.IsZero() {
		cfg.StartedAt = cfg.Now()
	}
	if cfg.LoginAttempts <= 0 {
		cfg.LoginAttempts = 10
	}
	if cfg.LoginWindow <= 0 {
		cfg.LoginWindow = 15 * time.Minute
	}
	if cfg.LoginHashes <= 0 {
		cfg.LoginHashes = max(1, runtime.GOMAXPROCS(0)/4)
	}
	if cfg.LoginWait <= 0 {
		cfg.LoginWait = 2 * time.Second
	}
	if cfg.Egress == nil {
		cfg.Egress, _ = egress.New(nil) // an empty list cannot fail
	}
	if cfg.AdminTokenGrace <= 0 {
		cfg.AdminTokenGrace = 10 * time.Minute
	}
	doc, err := loadSpec()
	if err != nil {
		return nil, fmt.Errorf("controlapi: load spec: %w", err)
	}
	doc.Servers = nil // match any host: the spec's server is a template
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("controlapi: route spec: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		st:        cfg.Store,
		log:       cfg.Logger,
		now:       cfg.Now,
		router:    router,
		logins:    newLoginThrottle(cfg.LoginAttempts, cfg.LoginWindow),
		passwords: newPasswordChecker(cfg.LoginHashes, cfg.LoginWait),
		origins:   http.NewCrossOriginProtection(),
		admin:     newAdminTokens(cfg.AdminToken, cfg.AdminTokenExpires, cfg.AdminTokenFile, cfg.AdminTokenGrace),
	}
	s.svc = &Service{s: s, rules: operationRules}
	s.api = controlgen.HandlerWithOptions(
		controlgen.NewStrictHandlerWithOptions(s, nil, controlgen.StrictHTTPServerOptions{
			RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
				// The validator has passed the request; what is left is a body
				// the generated decoder cannot bind. Never echo it.
				writeError(s.log, w, r, badRequest("the request body could not be decoded"))
			},
			ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
				writeError(s.log, w, r, err)
			},
		}),
		controlgen.StdHTTPServerOptions{
			ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
				writeError(s.log, w, r, paramError(err))
			},
		},
	)
	return s, nil
}

// loadSpec parses the embedded spec. controlgen embeds it as JSON, but its
// GetSpec hands that to kin-openapi's loader, which reads every document
// through its YAML parser first: some 28 MB allocated at start-up for a
// 155 KB document, which count in the process's peak resident memory.
// Decoding the JSON with encoding/json and resolving the references the same
// way allocates about 11 MB and gives the same document.
func loadSpec() (*openapi3.T, error) {
	data, err := controlgen.GetSpecJSON()
	if err != nil {
		return nil, err
	}
	doc := &openapi3.T{}
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, err
	}
	if err := openapi3.NewLoader().ResolveRefsIn(doc, nil); err != nil {
		return nil, err
	}
	return doc, nil
}

// ServeHTTP routes a request through the spec, authenticates it, checks its
// CSRF token, validates it against the spec and hands it to the generated
// strict handler; it logs one line per request (never a body).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	// Every answer: never sniffed into another type, never kept by a cache
	// (minted keys, rotated secrets and tokens are in some; the rest are one
	// caller's view of the catalog).
	rec.Header().Set("X-Content-Type-Options", "nosniff")
	rec.Header().Set("Cache-Control", "no-store")
	actor := "-"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "control api handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			if !rec.wrote {
				writeError(s.log, rec, r, &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"})
			}
		}
		// Reads that went well are routine; writes and failures are worth a line.
		level := slog.LevelInfo
		if r.Method == http.MethodGet && rec.status < 400 {
			level = slog.LevelDebug
		}
		s.log.LogAttrs(r.Context(), level, "control api",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.String("actor", actor), slog.String("client", clientHost(r)),
			slog.Duration("took", s.now().Sub(start)))
	}()
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		if allow := s.allowed(r); allow != "" {
			rec.Header().Set("Allow", allow)
			writeError(s.log, rec, r, &apiError{status: http.StatusMethodNotAllowed, code: codeInvalid, message: "method not allowed; use " + allow})
		} else {
			writeError(s.log, rec, r, &apiError{status: http.StatusNotFound, code: codeNotFound, message: "no such endpoint"})
		}
		return
	}
	if r.Body != nil {
		limit := int64(maxBody)
		if route.Operation != nil && route.Operation.OperationID == "applyConfig" {
			limit = maxApplyBody
		}
		r.Body = http.MaxBytesReader(rec, r.Body, limit)
	}
	ctx := context.WithValue(RequestContext(r), acceptKey{}, r.Header.Get("Accept"))
	r = r.WithContext(ctx)
	if route.Operation != nil && route.Operation.OperationID == "login" {
		// Before the body is read or anything is hashed.
		if err := s.logins.admitAddr(r, s.now()); err != nil {
			writeError(s.log, rec, r, err)
			return
		}
	}
	if r.Header.Get("Authorization") == "" {
		// A browser's request (cookie or sign-in), not the admin bearer's.
		if err := s.CheckOrigin(r); err != nil {
			writeError(s.log, rec, r, err)
			return
		}
	}
	if !isPublic(route.Operation) {
		c, err := s.authenticate(ctx, r)
		if err != nil {
			writeError(s.log, rec, r, err)
			return
		}
		actor = c.actor
		if err := c.checkCSRF(r); err != nil {
			writeError(s.log, rec, r, err)
			return
		}
		ctx = withCaller(ctx, c)
		r = r.WithContext(ctx)
	}
	if err := validate(ctx, r, route, params); err != nil {
		writeError(s.log, rec, r, err)
		return
	}
	s.api.ServeHTTP(rec, r)
}

// allowed lists the methods the spec has for r's path ("" when it has none).
// The router tells a wrong method from a wrong path only for paths without
// parameters, so ask it once per method.
func (s *Server) allowed(r *http.Request) string {
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, _, err := s.router.FindRoute(probe); err == nil {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, ", ")
}

// isPublic reports whether an operation declares no security (login).
func isPublic(op *openapi3.Operation) bool {
	return op != nil && op.Security != nil && len(*op.Security) == 0
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
