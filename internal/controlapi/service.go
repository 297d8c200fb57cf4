package controlapi

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/relay-llm/relay/internal/rbac"
)

// Service is the control plane's operations as typed methods: each takes
// the context of a signed-in caller (SignedIn, or the API's authentication)
// and plain arguments, and returns the domain value (the models types,
// which are the shape of the API's bodies) or an error that the sentinels
// below name. The strict server (strict.go) and the console (package ui)
// are both thin adapters over it: neither reads the other's generated
// response variants.
//
// Authorization is one layer over the methods (coder's dbauthz shape):
// every method calls enter with its operation's name first, which applies
// the operation's rule of authz.go and, when the method returns, checks
// that it asked the verb its rule names. TestService_EveryMethodAuthorizes
// finds the methods by reflection, so a method without the check fails it.
type Service struct {
	s     *Server
	rules map[string]rule // operationRules; a test gives none to see every method refuse
}

// Service returns the server's service layer.
func (s *Server) Service() *Service { return s.svc }

// The sentinel errors of the service layer. Every error a Service method
// returns maps to the API's status and body (Explain, writeError); these
// name the classes a caller branches on: errors.Is(err, ErrNotFound).
var (
	ErrNotFound   = errors.New("not found")         // 404: the row does not exist, or the caller may not see it
	ErrForbidden  = errors.New("forbidden")         // 403: the caller sees the row but may not do this
	ErrConflict   = errors.New("conflict")          // 409: a unique value is taken, or the row is still referenced
	ErrValidation = errors.New("validation failed") // 422: the values break a rule; Explain names the fields
	ErrBadRequest = errors.New("invalid request")   // 400
	ErrUnauthed   = errors.New("not signed in")     // 401
)

// Is lets the sentinels above match an apiError by its code.
func (e *apiError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.code == codeNotFound
	case ErrForbidden:
		return e.code == codeForbidden
	case ErrConflict:
		return e.code == codeConflict
	case ErrValidation:
		return e.code == codeValidation
	case ErrBadRequest:
		return e.code == codeInvalid
	case ErrUnauthed:
		return e.code == codeUnauthed
	}
	return false
}

// internalError is the 500 the caller sees when the authorization layer
// refuses to run or to answer an operation; the reason goes to the log.
func internalError() error {
	return &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"}
}

// enter is the authorization layer's one door; every Service method calls it
// first, with the name of its operation (a console-only method, a search,
// with the name of the list it narrows), and defers done(&err):
//
//   - an operation without a rule is refused before anything runs;
//   - a rule at system scope is checked here (403 naming the verb);
//   - every other rule's verb depends on the row, which the method reads: it
//     asks the caller (Can, Reach, CanGrant …), each question is recorded on
//     the caller enter gives it, and done turns an answer that never asked
//     the rule's verb into a 500 (logged) — so a method that forgets to
//     authorize, or checks another verb than its rule says, fails closed.
func (v *Service) enter(ctx context.Context, op string) (*Server, context.Context, func(*error), error) {
	ctx, done, err := v.s.guard(ctx, v.rules, op)
	return v.s, ctx, done, err
}

// guard is enter for one operation under rules.
func (s *Server) guard(ctx context.Context, rules map[string]rule, op string) (context.Context, func(*error), error) {
	r, ok := rules[op]
	if !ok {
		s.log.ErrorContext(ctx, "control api: operation has no authorization rule", "operation", op)
		return ctx, nil, internalError()
	}
	if r.public {
		return ctx, func(*error) {}, nil
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return ctx, nil, err
	}
	own := *c
	own.asked = new(atomic.Uint32)
	if r.system {
		if err := can403(&own, r.verb, rbac.System()); err != nil {
			return ctx, nil, err
		}
	}
	done := func(err *error) {
		if *err == nil && r.verb != 0 && rbac.Verb(own.asked.Load())&r.verb == 0 {
			s.log.ErrorContext(ctx, "control api: operation answered without asking its rule's verb", "operation", op,
				"rule", r.verb.String(), "asked", rbac.Verb(own.asked.Load()).String())
			*err = internalError()
		}
	}
	return withCaller(ctx, &own), done, nil
}
