package controlapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
)

// The admin console (package ui) calls the strict-server methods of Server
// directly — one set of rules, one RBAC, one audit trail — and needs the few
// steps ServeHTTP takes before them: authenticate the session cookie, check
// the CSRF token, validate a body against the spec, and turn an error into
// what a page shows. They are here, next to the steps they reuse.

// Principal is the signed-in user of a console request.
type Principal struct {
	UserID    uuid.UUID
	Email     string
	Name      string
	CSRFToken string
	subject   *rbac.Subject
}

// Can reports whether the principal holds v at scope.
func (p *Principal) Can(v rbac.Verb, at rbac.Scope) bool { return p.subject.Can(v, at) }

// CanAnywhere reports whether the principal holds v at some scope.
func (p *Principal) CanAnywhere(v rbac.Verb) bool { return p.subject.CanAnywhere(v) }

// CheckCSRF compares a form's token with the session's in constant time.
func (p *Principal) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(p.CSRFToken)) == 1
}

// SignedIn authenticates a console request by its session cookie only (the
// admin bearer is for scripts) and returns a context that carries the caller
// for the strict methods.
func (s *Server) SignedIn(r *http.Request) (context.Context, *Principal, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, nil, unauthenticated("sign in")
	}
	r.Header.Del("Authorization")
	c, err := s.authenticate(r.Context(), r)
	if err != nil {
		return nil, nil, err
	}
	p := &Principal{UserID: c.user.ID, Email: c.user.Email, Name: c.user.Name, CSRFToken: c.session.CSRFToken, subject: c.Subject}
	return withCaller(r.Context(), c), p, nil
}

// Check validates body as the JSON body of method path against the spec,
// exactly as ServeHTTP does for the API (nil body: no body).
func (s *Server) Check(ctx context.Context, method, path string, body any) error {
	var buf []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		buf = b
	}
	r, err := http.NewRequestWithContext(ctx, method, "http://console"+path, bytes.NewReader(buf))
	if err != nil {
		return err
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		return err
	}
	return validate(ctx, r, route, params)
}

// Problem is an error as a console page shows it: the status the API would
// answer, its message, and a message per field at fault.
type Problem struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
}

// Explain maps an error of a strict method (or of Check) to the API's status
// and message; anything else is a 500 "internal error" (log the error
// itself, never show it).
func Explain(method string, err error) Problem {
	var e *apiError
	if !errors.As(err, &e) {
		if e = storeError(method, err); e == nil {
			return Problem{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"}
		}
	}
	p := Problem{Status: e.status, Code: e.code, Message: e.message, Fields: map[string]string{}}
	for _, d := range e.details {
		if _, ok := p.Fields[d.Field]; !ok {
			p.Fields[d.Field] = d.Message
		}
	}
	return p
}
