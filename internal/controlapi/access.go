package controlapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// Access rules of every handler, in one place of words: a row the caller
// cannot read is 404 (as if it did not exist); a row it can read but not
// change is 403; a body field naming a row the caller cannot read is 422
// ("no such …"). Lists hold only what the caller can read.

// can403 is the 403 of a visible row the caller may not change.
func can403(c *caller, v rbac.Verb, at rbac.Scope) error {
	if c.Can(v, at) {
		return nil
	}
	return forbidden(rbac.Need(v, at))
}

// found maps the store's not-found to the API's 404 for kind.
func found[R any](kind string, r R, err error) (R, error) {
	if errors.Is(err, store.ErrNotFound) {
		return r, notFound(kind)
	}
	return r, err
}

// projectScope returns the scope of a project (its team and itself).
func (s *Server) projectScope(ctx context.Context, projectID uuid.UUID) (rbac.Scope, error) {
	p, err := s.st.Projects().Get(ctx, projectID)
	if err != nil {
		return rbac.Scope{}, err
	}
	return rbac.InProject(p.TeamID, p.ID), nil
}

// readableProject returns the scope of a project named in a request body:
// a project that does not exist or that the caller cannot read is a 422 on field.
func (s *Server) readableProject(ctx context.Context, c *caller, field string, projectID uuid.UUID) (rbac.Scope, error) {
	sc, err := s.projectScope(ctx, projectID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.Can(rbac.Read, sc)) {
		return rbac.Scope{}, noSuch(field, "project")
	}
	return sc, err
}

// readableTeam checks a team named in a request body (422 on field when absent or unreadable).
func (s *Server) readableTeam(ctx context.Context, c *caller, field string, teamID uuid.UUID) error {
	_, err := s.st.Teams().Get(ctx, teamID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.CanSeeTeam(teamID)) {
		return noSuch(field, "team")
	}
	return err
}

// lookup is the result of a store read, for the checks below:
// got(s.st.Hosts().Get(ctx, id)).orNotFound("host").
type lookup[R any] struct {
	r   R
	err error
}

func got[R any](r R, err error) lookup[R] { return lookup[R]{r, err} }

// orNotFound is the row, or the API's 404 for kind when there is none.
func (l lookup[R]) orNotFound(kind string) (R, error) { return found(kind, l.r, l.err) }

// exists checks a row named in a request body: none is a 422 on field.
func (l lookup[R]) exists(field, kind string) error {
	if errors.Is(l.err, store.ErrNotFound) {
		return noSuch(field, kind)
	}
	return l.err
}

// canReadDirectory reports whether c may read users and groups.
func canReadDirectory(c *caller) bool {
	return c.Can(rbac.Read, rbac.System()) || c.Can(rbac.ReadDirectory, rbac.System())
}

// storeReach turns where c holds v into the store's list filter.
func storeReach(c *caller, v rbac.Verb) store.Reach {
	r := c.Reach(v)
	return store.Reach{All: r.All, SelfID: c.User(), TeamIDs: r.Teams, ProjectIDs: r.Projects}
}

// Pagination: the cursor is the base64url of the last id of a page. A list
// asks the store for one row more than the limit to know whether a next page
// exists, so next_cursor is null exactly on the last page.

const (
	defaultLimit = 50
	maxLimit     = 500
)

// page decodes limit and cursor; a cursor that is not one of ours is a 400.
func page(limit *int32, cursor *string) (after uuid.UUID, fetch int32, err error) {
	n := int32(defaultLimit)
	if limit != nil {
		n = min(max(*limit, 1), maxLimit)
	}
	if cursor != nil && *cursor != "" {
		b, derr := base64.RawURLEncoding.DecodeString(*cursor)
		if derr == nil {
			after, derr = uuid.FromBytes(b)
		}
		if derr != nil {
			return uuid.Nil, 0, badRequest("cursor: not a cursor this API returned", detail("cursor", "not a cursor this API returned"))
		}
	}
	return after, n + 1, nil
}

// cut trims rows fetched with page's fetch to the page and returns the cursor
// of the next page (nil on the last one).
func cut[R any](rows []R, fetch int32, id func(R) uuid.UUID) ([]R, *string) {
	if int32(len(rows)) < fetch {
		return rows, nil
	}
	rows = rows[:fetch-1]
	c := base64.RawURLEncoding.EncodeToString(must(id(rows[len(rows)-1]).MarshalBinary()))
	return rows, &c
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("controlapi: %v", err))
	}
	return v
}

// convertAll maps rows to API models.
func convertAll[R, M any](rows []R, f func(R) M) []M {
	out := make([]M, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// pageOf is a list's page from the rows read for it (fetch: one more than
// the page, to tell whether another follows): cut to the page, each row
// converted by out, and the cursor of the next page.
func pageOf[R, M any](rows []R, err error, fetch int32, id func(R) uuid.UUID, out func(R) M) ([]M, *string, error) {
	if err != nil {
		return nil, nil, err
	}
	rows, next := cut(rows, fetch, id)
	return convertAll(rows, out), next, nil
}

// deleted is a delete's answer: its error, with a missing row a 404 naming kind.
func deleted(kind string, err error) error {
	_, err = found(kind, struct{}{}, err)
	return err
}
