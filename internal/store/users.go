package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var usersTable = &tableDef[dbsqlc.User, User, uuid.UUID, Page]{
	kind: KindUsers,
	key:  func(r User) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.User) User { return User(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r User) (dbsqlc.User, error) {
		return q.InsertUser(ctx, r.Email, r.Name, r.PasswordHash, r.Disabled)
	},
	get:     (*dbsqlc.Queries).GetUserByID,
	lock:    (*dbsqlc.Queries).GetUserByIDForUpdate,
	update:  fromRow(updateUserParams, (*dbsqlc.Queries).UpdateUser),
	remove:  (*dbsqlc.Queries).DeleteUser,
	list:    paged((*dbsqlc.Queries).ListUsersPage),
	catalog: func(c *Catalog) *[]User { return &c.Users },
	all:     (*dbsqlc.Queries).ListUsers,
}

// updateUserParams is what Update writes of a User: its key and mutable columns.
func updateUserParams(r User) dbsqlc.UpdateUserParams {
	return dbsqlc.UpdateUserParams{
		ID: r.ID, Email: r.Email, Name: r.Name, PasswordHash: r.PasswordHash, Disabled: r.Disabled,
	}
}

// Users is the users table. The password hash never reaches the audit log.
type Users struct {
	MutableTable[User, uuid.UUID, Page]
}

// Users returns the users table; each write runs in its own transaction.
func (s *Store) Users() Users { return Users{mutable(s.db(), usersTable)} }

// Users returns the users table inside t.
func (t *Tx) Users() Users { return Users{mutable(t.db(), usersTable)} }

// GetByEmail returns the user with email (compared exactly).
func (t Users) GetByEmail(ctx context.Context, email string) (User, error) {
	return usersTable.result(t.db.q.GetUserByEmail(ctx, email))
}
