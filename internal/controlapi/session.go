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
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// Login implements StrictServerInterface. The session token goes out only in
// the cookie; the row keeps its SHA-256. Every failure — unknown email, wrong
// password, a user without a password or disabled — is the same 401, after
// the same amount of hashing.
func (s *Server) Login(ctx context.Context, req gen.LoginRequestObject) (gen.LoginResponseObject, error) {
	email := strings.ToLower(strings.TrimSpace(string(req.Body.Email)))
	password := deref(req.Body.Password, "")
	now := s.now()
	if wait := s.logins.blocked(email, now); wait > 0 {
		return nil, &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
			message: "too many failed sign-ins; try again later", retryAfter: int(math.Ceil(wait.Seconds()))}
	}
	u, err := s.st.Users().GetByEmailFold(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	hash := dummyHash()
	usable := err == nil && !u.Disabled && u.PasswordHash != nil && *u.PasswordHash != ""
	if usable {
		hash = *u.PasswordHash
	}
	ok, herr := s.passwords.check(ctx, hash, password)
	if herr != nil && !errors.Is(herr, errBadHash) {
		return nil, herr // every hashing slot taken, or the caller gone
	}
	if herr != nil {
		s.log.ErrorContext(ctx, "stored password hash is unreadable", "user_id", u.ID)
	}
	if !usable || !ok {
		s.logins.fail(email, now)
		return nil, unauthenticated("wrong email or password")
	}
	s.logins.reset(email)

	token, csrf := randomToken(), randomToken()
	sess, err := s.st.Sessions().Create(ctx, userActor(u.ID), store.Session{
		TokenHash: tokenHash(token), UserID: u.ID, CSRFToken: csrf, ExpiresAt: now.Add(s.cfg.SessionTTL),
	})
	if err != nil {
		return nil, err
	}
	// Housekeeping rides on sign-ins: they are rare and the delete is indexed.
	if _, err := s.st.Sessions().DeleteExpired(ctx); err != nil {
		s.log.WarnContext(ctx, "delete expired sessions", "err", err)
	}
	return gen.Login200JSONResponse{
		Body:    models.Session{User: userOut(u), CsrfToken: csrf, ExpiresAt: sess.ExpiresAt},
		Headers: gen.Login200ResponseHeaders{SetCookie: s.sessionCookie(ctx, token, sess.ExpiresAt).String()},
	}, nil
}

// Logout implements StrictServerInterface: it deletes the session and
// expires the cookie. The admin token has no session to end.
func (s *Server) Logout(ctx context.Context, _ gen.LogoutRequestObject) (gen.LogoutResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if c.session == nil {
		return nil, unauthenticated("there is no session to end: the admin token is not signed in")
	}
	if err := s.st.Sessions().Delete(ctx, c.actor, c.session.TokenHash); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return gen.Logout204Response{Headers: gen.Logout204ResponseHeaders{SetCookie: s.clearedCookie(ctx).String()}}, nil
}

// Whoami implements StrictServerInterface.
func (s *Server) Whoami(ctx context.Context, _ gen.WhoamiRequestObject) (gen.WhoamiResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if c.user == nil {
		return gen.Whoami200JSONResponse{Principal: models.PrincipalAdminToken, RoleBindings: []models.RoleBinding{}}, nil
	}
	rbs, err := s.st.RoleBindings().ListByUserWithGroups(ctx, c.user.ID)
	if err != nil {
		return nil, err
	}
	u := userOut(*c.user)
	out := gen.Whoami200JSONResponse{Principal: models.PrincipalUser, User: &u, RoleBindings: convertAll(rbs, roleBindingOut)}
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
