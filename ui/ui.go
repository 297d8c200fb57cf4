// Package ui is Relay's admin console: templ components and the HTTP
// handlers that serve them at / on the control plane (the control API keeps
// /api). It calls the control plane's service layer (controlapi.Service) in
// process — the same validation, RBAC and audit trail as the API, never the
// API over a loopback, never a generated response variant — and signs in
// with the API's session cookie.
//
// Every page is a full document on a normal request and just the contents of
// <main> on an htmx request (HX-Request); every form also works as a plain
// POST. Forms carry the session's CSRF token; the Content-Security-Policy
// allows only this origin's assets and scripts with the response's nonce.
// Secrets are shown once: a minted relay key on the page that mints it, a
// host key secret never.
//
// It owns nothing on the inference path and reads no store directly.
package ui

//go:generate go tool templ generate

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/a-h/templ"

	"github.com/relay-llm/relay/internal/controlapi"
)

//go:embed static
var static embed.FS

// Handler serves the console.
type Handler struct {
	api   *controlapi.Server
	svc   *controlapi.Service // api.Service(): what every page calls
	log   *slog.Logger
	mux   *http.ServeMux
	kinds []*kind
}

// New returns the console for api; mount it at / on the control plane.
func New(api *controlapi.Server, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{api: api, svc: api.Service(), log: log, mux: http.NewServeMux()}
	h.kinds = h.catalog()
	h.routes()
	return h
}

func (h *Handler) routes() {
	m := h.mux
	m.Handle("GET /static/", http.StripPrefix("/", staticFiles()))
	m.HandleFunc("GET /sign-in", h.signInPage)
	m.HandleFunc("POST /sign-in", h.signIn)
	m.HandleFunc("POST /sign-out", h.signedIn(h.signOut))
	m.HandleFunc("GET /password", h.signedIn(h.passwordPage))
	m.HandleFunc("POST /password", h.signedIn(h.changePassword))
	m.HandleFunc("GET /{$}", h.signedIn(h.overview))
	m.HandleFunc("/", h.notFound)
	m.HandleFunc("GET /usage", h.signedIn(h.usage))
	m.HandleFunc("GET /usage/requests/{request_id}", h.signedIn(h.request))
	m.HandleFunc("GET /breakers", h.signedIn(h.breakers))
	m.HandleFunc("POST /breakers/{id}/clear", h.signedIn(h.clearBreakers))
	m.HandleFunc("GET /audit", h.signedIn(h.audit))
	m.HandleFunc("GET /explain", h.signedIn(h.explain))
	m.HandleFunc("GET /payloads", h.signedIn(h.payloads))
	m.HandleFunc("GET /payloads/{request_id}", h.signedIn(h.capture))
	m.HandleFunc("POST /payloads/{request_id}/delete", h.signedIn(h.deleteCapture))
	m.HandleFunc("POST /payloads/projects/{id}/delete", h.signedIn(h.deleteProjectCaptures))
	m.HandleFunc("POST /relay-keys/{id}/revoke", h.signedIn(h.revokeRelayKey))
	m.HandleFunc("POST /relay-keys/{id}/rotate", h.signedIn(h.rotateRelayKey))
	m.HandleFunc("POST /host-keys/{id}/test", h.signedIn(h.testHostKey))
	m.HandleFunc("GET /mcp-servers/{id}/tools", h.signedIn(h.mcpTools))
	m.HandleFunc("POST /mcp-servers/{id}/tools/{tool}/approve", h.signedIn(h.approveMcpTool))
	m.HandleFunc("POST /mcp-servers/{id}/tools/{tool}/withhold", h.signedIn(h.withholdMcpTool))
	m.HandleFunc("GET /objects", h.signedIn(h.objects))
	for _, k := range h.kinds {
		m.HandleFunc("GET /"+k.slug, h.signedIn(h.list(k)))
		if k.create != nil {
			m.HandleFunc("GET /"+k.slug+"/new", h.signedIn(h.newForm(k)))
			m.HandleFunc("POST /"+k.slug, h.signedIn(h.createRow(k)))
		}
		if k.edit != nil {
			m.HandleFunc("GET /"+k.slug+"/{id}", h.signedIn(h.editForm(k)))
			m.HandleFunc("POST /"+k.slug+"/{id}", h.signedIn(h.updateRow(k)))
		}
		if k.remove != nil {
			m.HandleFunc("POST /"+k.slug+"/{id}/delete", h.signedIn(h.deleteRow(k)))
		}
	}
}

// notFound answers an address the console does not have: a page in the
// layout when signed in, a plain 404 otherwise (never a redirect to sign-in,
// so a browser's own requests, such as /favicon.ico, cannot disturb the
// sign-in form).
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	ctx, who, err := h.api.SignedIn(r)
	if err != nil || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	p := &page{w: w, r: r, ctx: ctx, who: who, nonce: nonceOf(r)}
	p.fail(controlapi.Problem{Status: http.StatusNotFound, Message: "There is nothing at this address."})
}

// staticFiles serves the embedded assets; their names do not change between
// builds, so they are revalidated rather than cached for good.
func staticFiles() http.Handler {
	fs := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		fs.ServeHTTP(w, r)
	})
}

// ServeHTTP sets the security headers of every answer and routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nonce := newNonce()
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'self'; "+
		"img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), nonceKey{}, nonce)))
}

type nonceKey struct{}

func newNonce() string {
	b := make([]byte, 18)
	rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawStdEncoding.EncodeToString(b)
}

// page is one signed-in request.
type page struct {
	w     http.ResponseWriter
	r     *http.Request
	ctx   context.Context // carries the API caller
	who   *controlapi.Principal
	nonce string
}

func (p *page) htmx() bool { return p.r.Header.Get("HX-Request") == "true" }

// signedIn runs fn for a signed-in user; it sends anyone else to the sign-in
// page and refuses a POST without the session's CSRF token.
func (h *Handler) signedIn(fn func(*page)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, who, err := h.api.SignedIn(r)
		if err != nil {
			pr := controlapi.Explain(r.Method, err)
			if pr.Status != http.StatusUnauthorized {
				// Postgres down is the API's 503 database_unavailable, as a
				// page of its own (with Retry-After); anything else a 500 page.
				if pr.Status >= 500 {
					h.log.ErrorContext(r.Context(), "console sign-in check failed", "err", err)
				}
				(&page{w: w, r: r, ctx: r.Context(), nonce: nonceOf(r)}).fail(pr)
				return
			}
			to := "/sign-in"
			if r.Method == http.MethodGet && r.URL.Path != "/" {
				to += "?next=" + url.QueryEscape(r.URL.RequestURI())
			}
			redirect(w, r, to)
			return
		}
		p := &page{w: w, r: r, ctx: ctx, who: who, nonce: nonceOf(r)}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				p.fail(controlapi.Problem{Status: http.StatusBadRequest, Message: "the form could not be read"})
				return
			}
			token := r.PostForm.Get("csrf")
			if token == "" {
				token = r.Header.Get(controlapi.CSRFHeader)
			}
			if !who.CheckCSRF(token) || h.api.CheckOrigin(r) != nil {
				p.fail(controlapi.Problem{Status: http.StatusForbidden, Message: "the form has expired or did not come from this console; reload the page and try again"})
				return
			}
		}
		fn(p)
	}
}

func nonceOf(r *http.Request) string {
	n, _ := r.Context().Value(nonceKey{}).(string)
	return n
}

// redirect sends the browser to a page after a form: a 303 for a plain
// request, HX-Location for htmx (which then loads it as a fragment).
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Location", `{"path":"`+to+`","target":"main"}`)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// render writes a page: the layout around body on a normal request, the
// contents of <main> on an htmx request.
func (p *page) render(status int, title, nav string, body templ.Component) {
	p.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	p.w.Header().Set("Cache-Control", "no-store")
	p.w.Header().Set("Vary", "HX-Request")
	p.w.WriteHeader(status)
	// A render error is a client that went away: the status is written.
	if p.htmx() {
		_ = fragment(title, body).Render(p.ctx, p.w)
	} else {
		_ = layout(layoutData{Title: title, Nav: nav, Who: p.who, CSRF: csrfOf(p.who), Nonce: p.nonce}, body).Render(p.ctx, p.w)
	}
}

func csrfOf(who *controlapi.Principal) string {
	if who == nil {
		return ""
	}
	return who.CSRFToken
}

// fail renders a problem as a page of its own.
func (p *page) fail(pr controlapi.Problem) {
	if pr.RetryAfter > 0 {
		p.w.Header().Set("Retry-After", strconv.Itoa(pr.RetryAfter))
	}
	p.render(pr.Status, "Error", "", errorPage(pr))
}

// failErr renders an error of a Service method.
func (h *Handler) failErr(p *page, err error) {
	pr := controlapi.Explain(p.r.Method, err)
	if pr.Status >= 500 {
		h.log.ErrorContext(p.ctx, "console request failed", "method", p.r.Method, "path", p.r.URL.Path, "err", err)
	}
	p.fail(pr)
}

// problemTitle heads an error page.
func problemTitle(pr controlapi.Problem) string {
	switch pr.Status {
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusUnauthorized:
		return "Sign in again"
	case http.StatusServiceUnavailable:
		return "The database is unavailable"
	}
	if pr.Status >= 500 {
		return "Something went wrong"
	}
	return "That did not work"
}
