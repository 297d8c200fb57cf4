package controlapi

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"strings"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/server"
	"github.com/relay-llm/relay/internal/store"
)

// SignIn is a Login's answer: the session, and the cookie that carries its
// token (the only place the token goes).
type SignIn struct {
	Session models.Session
	Cookie  *http.Cookie
}

// Login is the operation of the same name in openapi/control.yaml. The session token goes out only in
// the cookie; the row keeps its SHA-256. Every failure — unknown email, wrong
// password, a user without a password or disabled — is the same 401, after
// the same amount of hashing.
func (v *Service) Login(ctx context.Context, body *models.LoginRequest) (out SignIn, err error) {
	s, ctx, done, err := v.enter(ctx, "Login")
	if err != nil {
		return out, err
	}
	defer done(&err)
	email := strings.ToLower(strings.TrimSpace(string(body.Email)))
	password := deref(body.Password, "")
	now := s.now()
	if wait := s.logins.blocked(email, now); wait > 0 {
		return out, &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
			message: "too many failed sign-ins; try again later", retryAfter: int(math.Ceil(wait.Seconds()))}
	}
	u, err := s.st.Users().GetByEmailFold(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return out, err
	}
	hash := dummyHash()
	usable := err == nil && !u.Disabled && u.PasswordHash != nil && *u.PasswordHash != ""
	if usable {
		hash = *u.PasswordHash
	}
	ok, herr := s.passwords.check(ctx, hash, password)
	if herr != nil && !errors.Is(herr, errBadHash) {
		return out, herr // every hashing slot taken, or the caller gone
	}
	if herr != nil {
		s.log.ErrorContext(ctx, "stored password hash is unreadable", "user_id", u.ID)
	}
	if !usable || !ok {
		s.logins.fail(email, now)
		return out, unauthenticated("wrong email or password")
	}
	s.logins.reset(email)

	token, csrf := randomToken(), randomToken()
	sess, err := s.st.Sessions().Create(ctx, userActor(u.ID), store.Session{
		TokenHash: tokenHash(token), UserID: u.ID, CSRFToken: csrf, ExpiresAt: now.Add(s.cfg.SessionTTL),
	})
	if err != nil {
		return out, err
	}
	// Housekeeping rides on sign-ins: they are rare and the delete is indexed.
	if _, err := s.st.Sessions().DeleteExpired(ctx); err != nil {
		s.log.WarnContext(ctx, "delete expired sessions", "err", err)
	}
	return SignIn{
		Session: models.Session{User: userOut(u), CsrfToken: csrf, ExpiresAt: sess.ExpiresAt},
		Cookie:  s.sessionCookie(ctx, token, sess.ExpiresAt),
	}, nil
}

// Logout is the operation of the same name in openapi/control.yaml: it
// deletes the session and returns the cookie that expires the browser's. The admin token has no session to end.
func (v *Service) Logout(ctx context.Context) (out *http.Cookie, err error) {
	s, ctx, done, err := v.enter(ctx, "Logout")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if c.session == nil {
		return out, unauthenticated("there is no session to end: the admin token is not signed in")
	}
	if err := s.st.Sessions().Delete(ctx, c.actor, c.session.TokenHash); err != nil && !errors.Is(err, store.ErrNotFound) {
		return out, err
	}
	return s.clearedCookie(ctx), nil
}

// Whoami is the operation of the same name in openapi/control.yaml.
func (v *Service) Whoami(ctx context.Context) (out models.Whoami, err error) {
	s, ctx, done, err := v.enter(ctx, "Whoami")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if c.user == nil {
		return models.Whoami{Principal: models.PrincipalAdminToken, RoleBindings: []models.RoleBinding{}}, nil
	}
	rbs, err := s.st.RoleBindings().ListByUserWithGroups(ctx, c.user.ID)
	if err != nil {
		return out, err
	}
	u := userOut(*c.user)
	out = models.Whoami{Principal: models.PrincipalUser, User: &u, RoleBindings: convertAll(rbs, roleBindingOut)}
	if c.session != nil {
		csrf := c.session.CSRFToken
		out.CsrfToken = &csrf
	}
	return out, nil
}

// secureCookie says whether the session cookie is Secure: whenever the
// request reached Relay over TLS, on a TLS listener or through a trusted
// proxy that says so (server.OverTLS), or when Config.SecureCookies asks for
// it always. A browser that reached the console over TLS then never sends
// the cookie in the clear.
func (s *Server) secureCookie(ctx context.Context) bool {
	return s.cfg.SecureCookies || server.OverTLS(ctx)
}

// CheckOrigin is the second line behind the CSRF token, for cookie-signed
// writes of the API and the console's forms: a browser's Sec-Fetch-Site (or,
// without it, Origin) must say the request comes from this origin. Clients
// that are not browsers send neither and pass; safe methods always pass.
func (s *Server) CheckOrigin(r *http.Request) error {
	if err := s.origins.Check(r); err != nil {
		return &apiError{status: http.StatusForbidden, code: codeCSRF,
			message: "the request comes from another site (Origin / Sec-Fetch-Site); writes are accepted only from this console"}
	}
	return nil
}

// RequestContext is r's context with the client's address (clientHost) for
// the audit rows its writes make. ServeHTTP and SignedIn start from it; a
// console handler that calls a strict method without SignedIn (sign-in)
// passes it too.
func RequestContext(r *http.Request) context.Context {
	return store.WithClientAddr(r.Context(), clientHost(r))
}

// clientHost is the client's address for the log: the TCP peer, or the
// client a trusted proxy names (server.Forwarded rewrites RemoteAddr).
func clientHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
