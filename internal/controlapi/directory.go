package controlapi

import (
	"context"
	"errors"
	"net/mail"
	"slices"
	"strings"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// The directory — users, groups and memberships — is read by system-wide
// readers and by whoever may bind users and groups (rbac.ReadDirectory:
// project and team admins); every user reads its own row. Only system admins
// change it, except that users may change their own name and password.

// Users -------------------------------------------------------------------------

// ListUsers implements StrictServerInterface.
func (s *Server) ListUsers(ctx context.Context, req gen.ListUsersRequestObject) (gen.ListUsersResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	reach := store.Reach{All: canReadDirectory(c), SelfID: c.User()}
	rows, err := s.st.Users().ListVisible(ctx, store.Page{After: after, Limit: fetch}, req.Params.Email, reach)
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.User) uuid.UUID { return r.ID })
	return gen.ListUsers200JSONResponse{Items: convertAll(rows, userOut), NextCursor: next}, nil
}

// user reads a user the caller can see: itself, or anyone with directory read.
func (s *Server) user(ctx context.Context, id uuid.UUID) (*caller, store.User, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, store.User{}, err
	}
	if id != c.User() && !canReadDirectory(c) {
		return nil, store.User{}, notFound("user")
	}
	u, err := got(s.st.Users().Get(ctx, id)).orNotFound("user")
	return c, u, err
}

// storedEmail is the one check of an e-mail address on write, and the
// form stored: the bare address (RFC 5322, as net/mail reads it) — and only
// one that reads back as itself, since every response, the console and
// `relay export` parse it again. An address whose local part needs quotes
// ("<img…>"@example.com, "a b"@example.com) is refused here rather than
// stored in a form nothing can read back.
func storedEmail(raw string) (string, error) {
	m, err := mail.ParseAddress(strings.TrimSpace(raw))
	if err != nil {
		return "", invalid("email: not an e-mail address", "email")
	}
	again, err := mail.ParseAddress(m.Address)
	if err != nil || again.Address != m.Address || again.Name != "" {
		return "", invalid("email: an address whose local part needs quotes is not supported", "email")
	}
	return m.Address, nil
}

// CreateUser implements StrictServerInterface.
func (s *Server) CreateUser(ctx context.Context, req gen.CreateUserRequestObject) (gen.CreateUserResponseObject, error) {
	c, err := systemWrite(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	email, err := storedEmail(string(b.Email))
	if err != nil {
		return nil, err
	}
	row := store.User{Email: email, Name: deref(b.Name, ""), Disabled: deref(b.Disabled, false)}
	if b.Password != nil {
		h := hashPassword(*b.Password)
		row.PasswordHash = &h
	}
	row, err = s.st.Users().Create(ctx, c.actor, row)
	if err != nil {
		return nil, err
	}
	return gen.CreateUser201JSONResponse(userOut(row)), nil
}

// GetUser implements StrictServerInterface.
func (s *Server) GetUser(ctx context.Context, req gen.GetUserRequestObject) (gen.GetUserResponseObject, error) {
	_, u, err := s.user(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return gen.GetUser200JSONResponse(userOut(u)), nil
}

// UpdateUser implements StrictServerInterface. A new password or disabling
// the user ends its sessions, in the same transaction.
func (s *Server) UpdateUser(ctx context.Context, req gen.UpdateUserRequestObject) (gen.UpdateUserResponseObject, error) {
	c, _, err := s.user(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if !c.Can(rbac.ManageSystem, rbac.System()) {
		if req.ID != c.User() || b.Email != nil || b.Disabled != nil {
			return nil, forbidden("users may change only their own name and password; the rest needs manage_system on system")
		}
	}
	var email string
	if b.Email != nil {
		if email, err = storedEmail(string(*b.Email)); err != nil {
			return nil, err
		}
	}
	var hash *string
	if b.Password != nil {
		h := hashPassword(*b.Password)
		hash = &h
	}
	endSessions := b.Password != nil || (b.Disabled != nil && *b.Disabled)
	var row store.User
	err = s.st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		row, err = tx.Users().Modify(ctx, c.actor, req.ID, func(r *store.User) error {
			if b.Email != nil {
				r.Email = email
			}
			set(&r.Name, b.Name)
			set(&r.Disabled, b.Disabled)
			if hash != nil {
				r.PasswordHash = hash
			}
			return nil
		})
		if err != nil || !endSessions {
			return err
		}
		_, err = tx.Sessions().DeleteByUser(ctx, c.actor, req.ID)
		return err
	})
	if row, err = found("user", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateUser200JSONResponse(userOut(row)), nil
}

// DeleteUser implements StrictServerInterface.
func (s *Server) DeleteUser(ctx context.Context, req gen.DeleteUserRequestObject) (gen.DeleteUserResponseObject, error) {
	c, _, err := s.user(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if err := can403(c, rbac.ManageSystem, rbac.System()); err != nil {
		return nil, err
	}
	if _, err := found("user", struct{}{}, s.st.Users().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteUser204Response{}, nil
}

// Groups ------------------------------------------------------------------------

// group reads a group for a caller with directory read; write needs ManageSystem.
func (s *Server) group(ctx context.Context, id uuid.UUID, write bool) (*caller, store.Group, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, store.Group{}, err
	}
	if !canReadDirectory(c) {
		return nil, store.Group{}, notFound("group")
	}
	g, err := got(s.st.Groups().Get(ctx, id)).orNotFound("group")
	if err != nil {
		return nil, g, err
	}
	if write {
		if err := can403(c, rbac.ManageSystem, rbac.System()); err != nil {
			return nil, g, err
		}
	}
	return c, g, nil
}

// ListGroups implements StrictServerInterface.
func (s *Server) ListGroups(ctx context.Context, req gen.ListGroupsRequestObject) (gen.ListGroupsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !canReadDirectory(c) {
		return gen.ListGroups200JSONResponse{Items: []models.Group{}}, nil
	}
	rows, err := s.st.Groups().List(ctx, store.Page{After: after, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.Group) uuid.UUID { return r.ID })
	return gen.ListGroups200JSONResponse{Items: convertAll(rows, groupOut), NextCursor: next}, nil
}

// CreateGroup implements StrictServerInterface.
func (s *Server) CreateGroup(ctx context.Context, req gen.CreateGroupRequestObject) (gen.CreateGroupResponseObject, error) {
	c, err := systemWrite(ctx)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Groups().Create(ctx, c.actor, store.Group{Slug: req.Body.Slug, Name: deref(req.Body.Name, "")})
	if err != nil {
		return nil, err
	}
	return gen.CreateGroup201JSONResponse(groupOut(row)), nil
}

// GetGroup implements StrictServerInterface.
func (s *Server) GetGroup(ctx context.Context, req gen.GetGroupRequestObject) (gen.GetGroupResponseObject, error) {
	_, g, err := s.group(ctx, req.ID, false)
	if err != nil {
		return nil, err
	}
	return gen.GetGroup200JSONResponse(groupOut(g)), nil
}

// UpdateGroup implements StrictServerInterface.
func (s *Server) UpdateGroup(ctx context.Context, req gen.UpdateGroupRequestObject) (gen.UpdateGroupResponseObject, error) {
	c, _, err := s.group(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Groups().Modify(ctx, c.actor, req.ID, func(r *store.Group) error {
		set(&r.Slug, req.Body.Slug)
		set(&r.Name, req.Body.Name)
		return nil
	})
	if row, err = found("group", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateGroup200JSONResponse(groupOut(row)), nil
}

// DeleteGroup implements StrictServerInterface.
func (s *Server) DeleteGroup(ctx context.Context, req gen.DeleteGroupRequestObject) (gen.DeleteGroupResponseObject, error) {
	c, _, err := s.group(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	if _, err := found("group", struct{}{}, s.st.Groups().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteGroup204Response{}, nil
}

// ListGroupMembers implements StrictServerInterface.
func (s *Server) ListGroupMembers(ctx context.Context, req gen.ListGroupMembersRequestObject) (gen.ListGroupMembersResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, _, err := s.group(ctx, req.ID, false); err != nil {
		return nil, err
	}
	rows, err := s.st.GroupMemberships().List(ctx, store.GroupMembershipsPage{AfterGroupID: req.ID, AfterUserID: after, GroupID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.GroupMembership) uuid.UUID { return r.UserID })
	return gen.ListGroupMembers200JSONResponse{Items: convertAll(rows, memberOut), NextCursor: next}, nil
}

// CreateGroupMember implements StrictServerInterface.
func (s *Server) CreateGroupMember(ctx context.Context, req gen.CreateGroupMemberRequestObject) (gen.CreateGroupMemberResponseObject, error) {
	c, _, err := s.group(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	if err := got(s.st.Users().Get(ctx, req.Body.UserID)).exists("user_id", "user"); err != nil {
		return nil, err
	}
	row, err := s.st.GroupMemberships().Create(ctx, c.actor, store.GroupMembership{GroupID: req.ID, UserID: req.Body.UserID})
	if err != nil {
		return nil, err
	}
	return gen.CreateGroupMember201JSONResponse(memberOut(row)), nil
}

// DeleteGroupMember implements StrictServerInterface.
func (s *Server) DeleteGroupMember(ctx context.Context, req gen.DeleteGroupMemberRequestObject) (gen.DeleteGroupMemberResponseObject, error) {
	c, _, err := s.group(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	err = s.st.GroupMemberships().Delete(ctx, c.actor, store.GroupMembershipKey{GroupID: req.ID, UserID: req.UserID})
	if _, err := found("group member", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.DeleteGroupMember204Response{}, nil
}

// Role bindings -----------------------------------------------------------------

// roleBindingScope is the scope a role binding applies to.
func (s *Server) roleBindingScope(ctx context.Context, teamID, projectID *uuid.UUID) (rbac.Scope, error) {
	switch {
	case projectID != nil:
		return s.projectScope(ctx, *projectID)
	case teamID != nil:
		return rbac.InTeam(*teamID), nil
	}
	return rbac.System(), nil
}

// ownBinding reports whether rb applies to the caller (directly or through a group).
func (s *Server) ownBinding(ctx context.Context, c *caller, rb store.RoleBinding) (bool, error) {
	if c.User() == uuid.Nil {
		return false, nil
	}
	if rb.UserID != nil {
		return *rb.UserID == c.User(), nil
	}
	if rb.GroupID == nil {
		return false, nil
	}
	_, err := s.st.GroupMemberships().Get(ctx, store.GroupMembershipKey{GroupID: *rb.GroupID, UserID: c.User()})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// roleBinding reads a role binding the caller can see: with Read on its
// scope, or one that applies to the caller.
func (s *Server) roleBinding(ctx context.Context, id uuid.UUID) (*caller, store.RoleBinding, rbac.Scope, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, store.RoleBinding{}, rbac.Scope{}, err
	}
	rb, err := got(s.st.RoleBindings().Get(ctx, id)).orNotFound("role binding")
	if err != nil {
		return nil, rb, rbac.Scope{}, err
	}
	sc, err := s.roleBindingScope(ctx, rb.TeamID, rb.ProjectID)
	if err != nil {
		return nil, rb, sc, err
	}
	if !c.Can(rbac.Read, sc) {
		own, err := s.ownBinding(ctx, c, rb)
		if err != nil {
			return nil, rb, sc, err
		}
		if !own {
			return nil, rb, sc, notFound("role binding")
		}
	}
	return c, rb, sc, nil
}

// manageVerb is the verb that manages role bindings at a scope's level.
func manageVerb(at rbac.Scope) rbac.Verb {
	switch {
	case at.Project != uuid.Nil:
		return rbac.ManageProject
	case at.Team != uuid.Nil:
		return rbac.ManageTeam
	}
	return rbac.ManageSystem
}

func grantError(role rbac.Role, at rbac.Scope) error {
	return forbidden("granting " + string(role) + " on " + at.String() + " needs at least the verbs it grants there")
}

// ListRoleBindings implements StrictServerInterface.
func (s *Server) ListRoleBindings(ctx context.Context, req gen.ListRoleBindingsRequestObject) (gen.ListRoleBindingsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	rows, err := s.st.RoleBindings().ListVisible(ctx, store.RoleBindingsPage{
		After: after, UserID: p.UserID, GroupID: p.GroupID, TeamID: p.TeamID, ProjectID: p.ProjectID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.RoleBinding) uuid.UUID { return r.ID })
	return gen.ListRoleBindings200JSONResponse{Items: convertAll(rows, roleBindingOut), NextCursor: next}, nil
}

// CreateRoleBinding implements StrictServerInterface. The caller must hold,
// on the binding's scope, its level's manage verb and every verb the role
// grants there (rbac.Subject.CanGrant): no one hands out more than they have.
func (s *Server) CreateRoleBinding(ctx context.Context, req gen.CreateRoleBindingRequestObject) (gen.CreateRoleBindingResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if count(b.UserID, b.GroupID) != 1 {
		return nil, exactlyOne("user_id", "group_id")
	}
	if count(b.TeamID, b.ProjectID) > 1 {
		return nil, invalid("give at most one of team_id, project_id (neither: system-wide)", "team_id", "project_id")
	}
	sc := rbac.System()
	switch {
	case b.ProjectID != nil:
		if sc, err = s.readableProject(ctx, c, "project_id", *b.ProjectID); err != nil {
			return nil, err
		}
	case b.TeamID != nil:
		if err := s.readableTeam(ctx, c, "team_id", *b.TeamID); err != nil {
			return nil, err
		}
		sc = rbac.InTeam(*b.TeamID)
	}
	if err := can403(c, manageVerb(sc), sc); err != nil {
		return nil, err
	}
	if b.UserID != nil {
		if !canReadDirectory(c) {
			return nil, noSuch("user_id", "user")
		}
		if err := got(s.st.Users().Get(ctx, *b.UserID)).exists("user_id", "user"); err != nil {
			return nil, err
		}
	} else {
		if !canReadDirectory(c) {
			return nil, noSuch("group_id", "group")
		}
		if err := got(s.st.Groups().Get(ctx, *b.GroupID)).exists("group_id", "group"); err != nil {
			return nil, err
		}
	}
	if !c.CanGrant(rbac.Role(b.Role), sc) {
		return nil, grantError(rbac.Role(b.Role), sc)
	}
	row, err := s.st.RoleBindings().Create(ctx, c.actor, store.RoleBinding{
		Role: string(b.Role), UserID: b.UserID, GroupID: b.GroupID, TeamID: b.TeamID, ProjectID: b.ProjectID,
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateRoleBinding201JSONResponse(roleBindingOut(row)), nil
}

// GetRoleBinding implements StrictServerInterface.
func (s *Server) GetRoleBinding(ctx context.Context, req gen.GetRoleBindingRequestObject) (gen.GetRoleBindingResponseObject, error) {
	_, rb, _, err := s.roleBinding(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return gen.GetRoleBinding200JSONResponse(roleBindingOut(rb)), nil
}

// UpdateRoleBinding implements StrictServerInterface: changing the role needs
// CanGrant for both the old role and the new one.
func (s *Server) UpdateRoleBinding(ctx context.Context, req gen.UpdateRoleBindingRequestObject) (gen.UpdateRoleBindingResponseObject, error) {
	c, rb, sc, err := s.roleBinding(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	roles := []rbac.Role{rbac.Role(rb.Role)}
	if req.Body.Role != nil {
		roles = append(roles, rbac.Role(*req.Body.Role))
	}
	if i := slices.IndexFunc(roles, func(r rbac.Role) bool { return !c.CanGrant(r, sc) }); i >= 0 {
		return nil, grantError(roles[i], sc)
	}
	row, err := s.st.RoleBindings().Modify(ctx, c.actor, req.ID, func(r *store.RoleBinding) error {
		if req.Body.Role != nil {
			r.Role = string(*req.Body.Role)
		}
		return nil
	})
	if row, err = found("role binding", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateRoleBinding200JSONResponse(roleBindingOut(row)), nil
}

// DeleteRoleBinding implements StrictServerInterface.
func (s *Server) DeleteRoleBinding(ctx context.Context, req gen.DeleteRoleBindingRequestObject) (gen.DeleteRoleBindingResponseObject, error) {
	c, rb, sc, err := s.roleBinding(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if !c.CanGrant(rbac.Role(rb.Role), sc) {
		return nil, grantError(rbac.Role(rb.Role), sc)
	}
	if _, err := found("role binding", struct{}{}, s.st.RoleBindings().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteRoleBinding204Response{}, nil
}
