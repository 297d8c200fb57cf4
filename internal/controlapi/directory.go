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
)

// The directory — users, groups and memberships — is read by system-wide
// readers and by whoever may bind users and groups (rbac.ReadDirectory:
// project and team admins); every user reads its own row. Only system admins
// change it, except that users may change their own name and password.

// Users -------------------------------------------------------------------------

// ListUsers is the operation of the same name in openapi/control.yaml.
func (v *Service) ListUsers(ctx context.Context, params models.ListUsersParams) (out models.UserList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListUsers")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	reach := store.Reach{All: canReadDirectory(c), SelfID: c.User()}
	rows, err := s.st.Users().ListVisible(ctx, store.Page{After: after, Limit: fetch}, params.Email, reach)
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.User) uuid.UUID { return r.ID }, userOut)
	return out, err
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

// CreateUser is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateUser(ctx context.Context, body *models.UserCreate) (out models.User, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateUser")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	email, err := storedEmail(string(b.Email))
	if err != nil {
		return out, err
	}
	row := store.User{Email: email, Name: deref(b.Name, ""), Disabled: deref(b.Disabled, false)}
	if b.Password != nil {
		h := hashPassword(*b.Password)
		row.PasswordHash = &h
	}
	row, err = s.st.Users().Create(ctx, c.actor, row)
	if err != nil {
		return out, err
	}
	return userOut(row), nil
}

// GetUser is the operation of the same name in openapi/control.yaml.
func (v *Service) GetUser(ctx context.Context, id uuid.UUID) (out models.User, err error) {
	s, ctx, done, err := v.enter(ctx, "GetUser")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, u, err := s.user(ctx, id)
	if err != nil {
		return out, err
	}
	return userOut(u), nil
}

// UpdateUser is the operation of the same name in openapi/control.yaml. A new password or disabling
// the user ends its sessions, in the same transaction.
func (v *Service) UpdateUser(ctx context.Context, id uuid.UUID, body *models.UserUpdate) (out models.User, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateUser")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.user(ctx, id)
	if err != nil {
		return out, err
	}
	b := body
	if !c.Can(rbac.ManageSystem, rbac.System()) {
		if id != c.User() || b.Email != nil || b.Disabled != nil {
			return out, forbidden("users may change only their own name and password; the rest needs manage_system on system")
		}
	}
	var email string
	if b.Email != nil {
		if email, err = storedEmail(string(*b.Email)); err != nil {
			return out, err
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
		row, err = tx.Users().Modify(ctx, c.actor, id, func(r *store.User) error {
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
		_, err = tx.Sessions().DeleteByUser(ctx, c.actor, id)
		return err
	})
	if row, err = found("user", row, err); err != nil {
		return out, err
	}
	return userOut(row), nil
}

// DeleteUser is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteUser(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteUser")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.user(ctx, id)
	if err != nil {
		return err
	}
	if err := can403(c, rbac.ManageSystem, rbac.System()); err != nil {
		return err
	}
	if _, err := found("user", struct{}{}, s.st.Users().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
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

// ListGroups is the operation of the same name in openapi/control.yaml.
func (v *Service) ListGroups(ctx context.Context, params models.ListGroupsParams) (out models.GroupList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListGroups")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if !canReadDirectory(c) {
		return models.GroupList{Items: []models.Group{}}, nil
	}
	rows, err := s.st.Groups().List(ctx, store.Page{After: after, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Group) uuid.UUID { return r.ID }, groupOut)
	return out, err
}

// CreateGroup is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateGroup(ctx context.Context, body *models.GroupCreate) (out models.Group, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateGroup")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	row, err := s.st.Groups().Create(ctx, c.actor, store.Group{Slug: body.Slug, Name: deref(body.Name, "")})
	if err != nil {
		return out, err
	}
	return groupOut(row), nil
}

// GetGroup is the operation of the same name in openapi/control.yaml.
func (v *Service) GetGroup(ctx context.Context, id uuid.UUID) (out models.Group, err error) {
	s, ctx, done, err := v.enter(ctx, "GetGroup")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, g, err := s.group(ctx, id, false)
	if err != nil {
		return out, err
	}
	return groupOut(g), nil
}

// UpdateGroup is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateGroup(ctx context.Context, id uuid.UUID, body *models.GroupUpdate) (out models.Group, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateGroup")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.group(ctx, id, true)
	if err != nil {
		return out, err
	}
	row, err := s.st.Groups().Modify(ctx, c.actor, id, func(r *store.Group) error {
		set(&r.Slug, body.Slug)
		set(&r.Name, body.Name)
		return nil
	})
	if row, err = found("group", row, err); err != nil {
		return out, err
	}
	return groupOut(row), nil
}

// DeleteGroup is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteGroup(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteGroup")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.group(ctx, id, true)
	if err != nil {
		return err
	}
	if _, err := found("group", struct{}{}, s.st.Groups().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// ListGroupMembers is the operation of the same name in openapi/control.yaml.
func (v *Service) ListGroupMembers(ctx context.Context, id uuid.UUID, params models.ListGroupMembersParams) (out models.GroupMemberList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListGroupMembers")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, _, err := s.group(ctx, id, false); err != nil {
		return out, err
	}
	rows, err := s.st.GroupMemberships().List(ctx, store.GroupMembershipsPage{AfterGroupID: id, AfterUserID: after, GroupID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.GroupMembership) uuid.UUID { return r.UserID }, memberOut)
	return out, err
}

// CreateGroupMember is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateGroupMember(ctx context.Context, id uuid.UUID, body *models.GroupMemberCreate) (out models.GroupMember, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateGroupMember")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.group(ctx, id, true)
	if err != nil {
		return out, err
	}
	if err := got(s.st.Users().Get(ctx, body.UserID)).exists("user_id", "user"); err != nil {
		return out, err
	}
	row, err := s.st.GroupMemberships().Create(ctx, c.actor, store.GroupMembership{GroupID: id, UserID: body.UserID})
	if err != nil {
		return out, err
	}
	return memberOut(row), nil
}

// DeleteGroupMember is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteGroupMember(ctx context.Context, id uuid.UUID, userID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteGroupMember")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.group(ctx, id, true)
	if err != nil {
		return err
	}
	return deleted("group member", s.st.GroupMemberships().Delete(ctx, c.actor, store.GroupMembershipKey{GroupID: id, UserID: userID}))
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

// ListRoleBindings is the operation of the same name in openapi/control.yaml.
func (v *Service) ListRoleBindings(ctx context.Context, params models.ListRoleBindingsParams) (out models.RoleBindingList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListRoleBindings")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	p := params
	rows, err := s.st.RoleBindings().ListVisible(ctx, store.RoleBindingsPage{
		After: after, UserID: p.UserID, GroupID: p.GroupID, TeamID: p.TeamID, ProjectID: p.ProjectID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.RoleBinding) uuid.UUID { return r.ID })
	return models.RoleBindingList{Items: convertAll(rows, roleBindingOut), NextCursor: next}, nil
}

// CreateRoleBinding is the operation of the same name in openapi/control.yaml. The caller must hold,
// on the binding's scope, its level's manage verb and every verb the role
// grants there (rbac.Subject.CanGrant): no one hands out more than they have.
func (v *Service) CreateRoleBinding(ctx context.Context, body *models.RoleBindingCreate) (out models.RoleBinding, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateRoleBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	b := body
	if count(b.UserID, b.GroupID) != 1 {
		return out, exactlyOne("user_id", "group_id")
	}
	if count(b.TeamID, b.ProjectID) > 1 {
		return out, invalid("give at most one of team_id, project_id (neither: system-wide)", "team_id", "project_id")
	}
	sc := rbac.System()
	switch {
	case b.ProjectID != nil:
		if sc, err = s.readableProject(ctx, c, "project_id", *b.ProjectID); err != nil {
			return out, err
		}
	case b.TeamID != nil:
		if err := s.readableTeam(ctx, c, "team_id", *b.TeamID); err != nil {
			return out, err
		}
		sc = rbac.InTeam(*b.TeamID)
	}
	if err := can403(c, manageVerb(sc), sc); err != nil {
		return out, err
	}
	if b.UserID != nil {
		if !canReadDirectory(c) {
			return out, noSuch("user_id", "user")
		}
		if err := got(s.st.Users().Get(ctx, *b.UserID)).exists("user_id", "user"); err != nil {
			return out, err
		}
	} else {
		if !canReadDirectory(c) {
			return out, noSuch("group_id", "group")
		}
		if err := got(s.st.Groups().Get(ctx, *b.GroupID)).exists("group_id", "group"); err != nil {
			return out, err
		}
	}
	if !c.CanGrant(rbac.Role(b.Role), sc) {
		return out, grantError(rbac.Role(b.Role), sc)
	}
	row, err := s.st.RoleBindings().Create(ctx, c.actor, store.RoleBinding{
		Role: string(b.Role), UserID: b.UserID, GroupID: b.GroupID, TeamID: b.TeamID, ProjectID: b.ProjectID,
	})
	if err != nil {
		return out, err
	}
	return roleBindingOut(row), nil
}

// GetRoleBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) GetRoleBinding(ctx context.Context, id uuid.UUID) (out models.RoleBinding, err error) {
	s, ctx, done, err := v.enter(ctx, "GetRoleBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, rb, _, err := s.roleBinding(ctx, id)
	if err != nil {
		return out, err
	}
	return roleBindingOut(rb), nil
}

// UpdateRoleBinding implements StrictServerInterface: changing the role needs
// CanGrant for both the old role and the new one.
func (v *Service) UpdateRoleBinding(ctx context.Context, id uuid.UUID, body *models.RoleBindingUpdate) (out models.RoleBinding, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateRoleBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, rb, sc, err := s.roleBinding(ctx, id)
	if err != nil {
		return out, err
	}
	roles := []rbac.Role{rbac.Role(rb.Role)}
	if body.Role != nil {
		roles = append(roles, rbac.Role(*body.Role))
	}
	if i := slices.IndexFunc(roles, func(r rbac.Role) bool { return !c.CanGrant(r, sc) }); i >= 0 {
		return out, grantError(roles[i], sc)
	}
	row, err := s.st.RoleBindings().Modify(ctx, c.actor, id, func(r *store.RoleBinding) error {
		if body.Role != nil {
			r.Role = string(*body.Role)
		}
		return nil
	})
	if row, err = found("role binding", row, err); err != nil {
		return out, err
	}
	return roleBindingOut(row), nil
}

// DeleteRoleBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteRoleBinding(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteRoleBinding")
	if err != nil {
		return err
	}
	defer done(&err)
	c, rb, sc, err := s.roleBinding(ctx, id)
	if err != nil {
		return err
	}
	if !c.CanGrant(rbac.Role(rb.Role), sc) {
		return grantError(rbac.Role(rb.Role), sc)
	}
	if _, err := found("role binding", struct{}{}, s.st.RoleBindings().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}
