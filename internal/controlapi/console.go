package controlapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
)

// The admin console (package ui) calls the Service (service.go) directly —
// one set of rules, one RBAC, one audit trail — and needs the few steps
// ServeHTTP takes before them: authenticate the session cookie, check
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
// for the Service methods.
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
	return withCaller(RequestContext(r), c), p, nil
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
	Status     int
	Code       string
	Message    string
	Fields     map[string]string
	RetryAfter int // seconds; a page sends Retry-After when > 0 (database_unavailable)
}

// Explain maps an error of a Service method (or of Check) to the API's status
// and message; anything else is a 500 "internal error" (log the error
// itself, never show it).
func Explain(method string, err error) Problem {
	var e *apiError
	if !errors.As(err, &e) {
		if e = storeError(method, err); e == nil {
			return Problem{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"}
		}
	}
	p := Problem{Status: e.status, Code: e.code, Message: e.message, Fields: map[string]string{}, RetryAfter: e.retryAfter}
	for _, d := range e.details {
		if _, ok := p.Fields[d.Field]; !ok {
			p.Fields[d.Field] = d.Message
		}
	}
	return p
}

// The console's searches: each is its List operation narrowed to the rows whose
// names contain term (store's Search and SearchVisible), with the same access
// rule and the same keyset cursor.

func search[R, M any](limit int32, cursor *string, rows func(after uuid.UUID, fetch int32) ([]R, error), id func(R) uuid.UUID, out func(R) M) ([]M, *string, error) {
	after, fetch, err := page(&limit, cursor)
	if err != nil {
		return nil, nil, err
	}
	rs, err := rows(after, fetch)
	return pageOf(rs, err, fetch, id, out)
}

// searchCatalog is search for a system-scoped catalog kind.
func searchCatalog[R, M any](ctx context.Context, limit int32, cursor *string, rows func(after uuid.UUID, fetch int32) ([]R, error), id func(R) uuid.UUID, out func(R) M) ([]M, *string, error) {
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return []M{}, nil, err
	}
	return search(limit, cursor, rows, id, out)
}

// SearchHosts is ListHosts narrowed to slug, name or base URL containing term.
func (v *Service) SearchHosts(ctx context.Context, term string, params models.ListHostsParams) (out models.HostList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListHosts")
	if err != nil {
		return out, err
	}
	defer done(&err)
	out.Items, out.NextCursor, err = searchCatalog(ctx, deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.Host, error) {
		return s.st.Hosts().Search(ctx, store.Page{After: after, Limit: fetch}, term)
	}, func(r store.Host) uuid.UUID { return r.ID }, hostOut)
	return out, err
}

// SearchModels is ListModels narrowed to name or provider containing term.
func (v *Service) SearchModels(ctx context.Context, term string, params models.ListModelsParams) (out models.ModelList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListModels")
	if err != nil {
		return out, err
	}
	defer done(&err)
	out.Items, out.NextCursor, err = searchCatalog(ctx, deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.Model, error) {
		return s.st.Models().Search(ctx, store.Page{After: after, Limit: fetch}, term)
	}, func(r store.Model) uuid.UUID { return r.ID }, modelOut)
	return out, err
}

// SearchPolicies is ListPolicies narrowed to slug or name containing term.
func (v *Service) SearchPolicies(ctx context.Context, term string, params models.ListPoliciesParams) (out models.PolicyList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicies")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	all, teams := c.Teams()
	out.Items, out.NextCursor, err = searchCatalog(ctx, deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.Policy, error) {
		return s.st.Policies().Search(ctx, store.PoliciesPage{After: after, AllTeams: all, TeamIDs: teams, Limit: fetch}, term)
	}, func(r store.Policy) uuid.UUID { return r.ID }, policyOut)
	return out, err
}

// SearchTeams is ListTeams narrowed to slug or name containing term.
func (v *Service) SearchTeams(ctx context.Context, term string, params models.ListTeamsParams) (out models.TeamList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListTeams")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	out.Items, out.NextCursor, err = search(deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.Team, error) {
		return s.st.Teams().SearchVisible(ctx, store.Page{After: after, Limit: fetch}, term, storeReach(c, rbac.Read))
	}, func(r store.Team) uuid.UUID { return r.ID }, teamOut)
	return out, err
}

// SearchProjects is ListProjects narrowed to slug or name containing term.
func (v *Service) SearchProjects(ctx context.Context, term string, params models.ListProjectsParams) (out models.ProjectList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListProjects")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	out.Items, out.NextCursor, err = search(deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.Project, error) {
		return s.st.Projects().SearchVisible(ctx, store.Page{After: after, Limit: fetch}, term, storeReach(c, rbac.Read))
	}, func(r store.Project) uuid.UUID { return r.ID }, projectOut)
	return out, err
}

// SearchServiceAccounts is ListServiceAccounts narrowed to slug or name containing term.
func (v *Service) SearchServiceAccounts(ctx context.Context, term string, params models.ListServiceAccountsParams) (out models.ServiceAccountList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListServiceAccounts")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	out.Items, out.NextCursor, err = search(deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.ServiceAccount, error) {
		return s.st.ServiceAccounts().SearchVisible(ctx, store.Page{After: after, Limit: fetch}, term, storeReach(c, rbac.Read))
	}, func(r store.ServiceAccount) uuid.UUID { return r.ID }, serviceAccountOut)
	return out, err
}

// SearchRelayKeys is ListRelayKeys narrowed to name or display prefix containing term.
func (v *Service) SearchRelayKeys(ctx context.Context, term string, params models.ListRelayKeysParams) (out models.RelayKeyList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListRelayKeys")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	out.Items, out.NextCursor, err = search(deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.RelayKey, error) {
		return s.st.RelayKeys().SearchVisible(ctx, store.Page{After: after, Limit: fetch}, term, storeReach(c, rbac.Read))
	}, func(r store.RelayKey) uuid.UUID { return r.ID }, s.relayKeyOut)
	return out, err
}

// SearchUsers is ListUsers narrowed to email or name containing term.
func (v *Service) SearchUsers(ctx context.Context, term string, params models.ListUsersParams) (out models.UserList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListUsers")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	reach := store.Reach{All: canReadDirectory(c), SelfID: c.User()}
	out.Items, out.NextCursor, err = search(deref(params.Limit, defaultLimit), params.Cursor, func(after uuid.UUID, fetch int32) ([]store.User, error) {
		return s.st.Users().SearchVisible(ctx, store.Page{After: after, Limit: fetch}, term, reach)
	}, func(r store.User) uuid.UUID { return r.ID }, userOut)
	return out, err
}

// The routing explain (route.go) routes on this pod's current snapshot
// with the inference plane's router and the pod's breakers.

// currentSnapshot is the snapshot the inference plane of this process routes
// on (the loader's); nil when the control plane runs without one.
func (s *Server) currentSnapshot() *snapshot.Snapshot {
	if cur, ok := s.cfg.Snapshot.(interface{ Current() *snapshot.Snapshot }); ok {
		return cur.Current()
	}
	return nil
}

// heldKeys is the pod's breakers as the router reads them: a key (or a key
// for one upstream model) whose breaker holds it until later is not ready.
// Nothing is claimed, recorded or cleared; nil: the pod has no breakers.
func (s *Server) heldKeys(now time.Time) []HeldKey {
	if s.cfg.Breakers == nil {
		return nil
	}
	held := []HeldKey{}
	for _, b := range s.cfg.Breakers() {
		if holds(b.State) && (b.RetryAt.IsZero() || b.RetryAt.After(now)) {
			held = append(held, HeldKey{HostKeyID: b.HostKeyID, SecretVersion: int(b.SecretVersion), Model: b.Model})
		}
	}
	return held
}

// holds reports whether a breaker in state keeps its key from being picked
// until its retry time: failing, cooling after a 429, or held for its
// credentials or quota (keypool's states, by name).
func holds(state string) bool {
	switch state {
	case "open", "cooling", "auth_failed", "quota_exhausted":
		return true
	}
	return false
}

// PacingQueue is the number of requests in this pod waiting for rate-limit
// budget now (relay_pacing_queue_length), for callers with system-wide read;
// ok is false when the caller may not see it or the control plane has no
// limiter.
func (s *Server) PacingQueue(p *Principal) (n int64, ok bool) {
	if s.cfg.PacingQueue == nil || !p.Can(rbac.Read, rbac.System()) {
		return 0, false
	}
	return s.cfg.PacingQueue(), true
}
