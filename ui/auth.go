package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/oapi-codegen/runtime/types"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/server"
)

// Sign-in has no session yet, so its form carries a token that must match a
// cookie set with the form (double submit): another site cannot sign a
// browser in to an account of its choosing.
const signInCookie = "relay_console_signin"

func (h *Handler) signInPage(w http.ResponseWriter, r *http.Request) {
	h.renderSignIn(w, r, http.StatusOK, safeNext(r.URL.Query().Get("next")), "", "")
}

func (h *Handler) renderSignIn(w http.ResponseWriter, r *http.Request, status int, next, email, msg string) {
	// Keep the token of a form already open in another tab of this browser.
	token := newNonce()
	if ck, err := r.Cookie(signInCookie); err == nil && len(ck.Value) == len(token) {
		token = ck.Value
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: token, Path: "/sign-in", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 3600,
		Secure: server.OverTLS(r.Context())})
	p := &page{w: w, r: r, ctx: r.Context(), nonce: nonceOf(r)}
	p.render(status, "Sign in", "", signInForm(token, next, email, msg))
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.renderSignIn(w, r, http.StatusBadRequest, "", "", "the form could not be read")
		return
	}
	next, email := safeNext(r.PostForm.Get("next")), strings.TrimSpace(r.PostForm.Get("email"))
	ck, err := r.Cookie(signInCookie)
	if token := r.PostForm.Get("csrf"); err != nil || token == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(token)) != 1 || h.api.CheckOrigin(r) != nil {
		h.renderSignIn(w, r, http.StatusForbidden, next, email, "The form has expired; try again.")
		return
	}
	cookie, pr := h.login(r, email, r.PostForm.Get("password"))
	if pr != nil {
		h.renderSignIn(w, r, pr.Status, next, email, pr.Message)
		return
	}
	w.Header().Add("Set-Cookie", cookie)
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Path: "/sign-in", MaxAge: -1, HttpOnly: true, Secure: server.OverTLS(r.Context())})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// login signs in through the API's Login and returns its Set-Cookie value.
func (h *Handler) login(r *http.Request, email, password string) (string, *controlapi.Problem) {
	body := models.LoginJSONRequestBody{Email: types.Email(email), Password: &password}
	if err := h.api.Check(r.Context(), http.MethodPost, "/api/auth/login", body); err != nil {
		return "", &controlapi.Problem{Status: http.StatusUnauthorized, Message: "wrong email or password"}
	}
	in, err := h.svc.Login(controlapi.RequestContext(r), &body) // the sign-in's audit row names the client
	if err != nil {
		pr := controlapi.Explain(r.Method, err)
		if pr.Status >= 500 {
			h.log.ErrorContext(r.Context(), "console sign-in failed", "err", err)
		}
		return "", &pr
	}
	return in.Cookie.String(), nil
}

// safeNext keeps a post-sign-in destination on this console: a path of this
// origin, or "/". Browsers read a Location far more loosely than its syntax:
// they drop tabs and newlines anywhere (`/\t/evil` is `//evil`), strip
// leading and trailing spaces and control characters, and take a backslash
// for a slash (`/\evil`, `\/evil`); `//evil` is another host and `x:` a
// scheme. So the destination must start with one "/" not followed by "/" or
// "\", and hold only printable ASCII without a backslash (the console's own
// addresses are percent-encoded, so nothing of it is lost); what is left
// must parse as a bare path with nothing that names a host or a scheme,
// and without a backslash even once decoded.
func safeNext(next string) string {
	if len(next) == 0 || len(next) > 2048 || next[0] != '/' || len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || strings.ContainsRune(u.Path, '\\') {
		return "/"
	}
	return next
}

func (h *Handler) signOut(p *page) {
	ck, err := h.svc.Logout(p.ctx)
	if err != nil {
		h.failErr(p, err)
		return
	}
	p.w.Header().Add("Set-Cookie", ck.String())
	http.Redirect(p.w, p.r, "/sign-in", http.StatusSeeOther)
}

func (h *Handler) passwordForm(p *page, errs map[string]string, msg string) form {
	return form{
		Title: "Change password", Action: "/password", Submit: "Change password", Cancel: "/", CSRF: p.who.CSRFToken, Error: msg,
		Fields: []field{
			{Name: "current", Label: "Current password", Kind: "password", Error: errs["current"], Required: true},
			{Name: "password", Label: "New password", Kind: "password", Error: errs["password"], Required: true, Help: "At least 8 characters."},
			{Name: "confirm", Label: "New password again", Kind: "password", Error: errs["confirm"], Required: true},
		},
	}
}

func (h *Handler) passwordPage(p *page) {
	p.render(http.StatusOK, "Change password", "", formPage(h.passwordForm(p, nil, "")))
}

// changePassword checks the current password by signing in with it, sets the
// new one (which ends every session of the user, this one too) and signs in
// again with it, so the user stays signed in on this browser only.
func (h *Handler) changePassword(p *page) {
	f := p.r.PostForm
	current, next := f.Get("current"), f.Get("password")
	bad := func(field, msg string) {
		p.render(http.StatusUnprocessableEntity, "Change password", "", formPage(h.passwordForm(p, map[string]string{field: msg}, "")))
	}
	switch {
	case len(next) < 8:
		bad("password", "use at least 8 characters")
		return
	case next != f.Get("confirm"):
		bad("confirm", "the two new passwords differ")
		return
	}
	if _, pr := h.login(p.r, p.who.Email, current); pr != nil {
		if pr.Status == http.StatusUnauthorized {
			bad("current", "this is not your current password")
		} else {
			p.fail(*pr)
		}
		return
	}
	body := models.UpdateUserJSONRequestBody{Password: &next}
	if err := h.api.Check(p.ctx, http.MethodPatch, "/api/users/"+p.who.UserID.String(), body); err != nil {
		bad("password", controlapi.Explain(http.MethodPatch, err).Message)
		return
	}
	if _, err := h.svc.UpdateUser(p.ctx, p.who.UserID, &body); err != nil {
		h.failErr(p, err)
		return
	}
	cookie, pr := h.login(p.r, p.who.Email, next)
	if pr != nil {
		p.fail(*pr)
		return
	}
	p.w.Header().Add("Set-Cookie", cookie)
	redirect(p.w, p.r, "/?changed=password")
}
