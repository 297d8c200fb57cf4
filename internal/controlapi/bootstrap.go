package controlapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// BootstrapActor is the audit actor of the first admin's creation.
const BootstrapActor = "bootstrap"

// Bootstrap creates the first admin when there are no users: a user with a
// system-wide admin role binding, from RELAY_ADMIN_EMAIL and
// RELAY_ADMIN_PASSWORD when both are set (the password is never printed),
// else admin@localhost with a random password printed once to out. It does
// nothing when any user exists, so it is safe to call on every start and
// from several pods at once (a concurrent bootstrap loses on the unique email
// and returns nil).
func Bootstrap(ctx context.Context, st *store.Store, getenv func(string) string, out io.Writer) error {
	users, err := st.Users().List(ctx, store.Page{Limit: 1})
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	if len(users) > 0 {
		return nil
	}
	email := strings.TrimSpace(getenv("RELAY_ADMIN_EMAIL"))
	password := getenv("RELAY_ADMIN_PASSWORD")
	generated := false
	switch {
	case email != "" && password != "":
		if len(password) < 8 {
			return errors.New("bootstrap admin: RELAY_ADMIN_PASSWORD must have at least 8 characters")
		}
		if email, err = storedEmail(email); err != nil {
			return errors.New("bootstrap admin: RELAY_ADMIN_EMAIL is not an e-mail address that reads back as itself (no quoted local part)")
		}
	case email != "" || password != "":
		return errors.New("bootstrap admin: set both RELAY_ADMIN_EMAIL and RELAY_ADMIN_PASSWORD, or neither")
	default:
		email, password, generated = "admin@localhost", generatePassword(), true
	}
	hash := hashPassword(password)
	err = st.InTx(ctx, func(tx *store.Tx) error {
		u, err := tx.Users().Create(ctx, BootstrapActor, store.User{Email: email, Name: "Administrator", PasswordHash: &hash})
		if err != nil {
			return err
		}
		_, err = tx.RoleBindings().Create(ctx, BootstrapActor, store.RoleBinding{Role: string(rbac.Admin), UserID: &u.ID})
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		return nil // another pod made the first admin at the same moment
	}
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	if generated {
		_, err = fmt.Fprintf(out, "Relay created the first admin user.\n  email:    %s\n  password: %s\nThis password is shown only now; sign in and change it.\n", email, password)
	} else {
		_, err = fmt.Fprintf(out, "Relay created the first admin user %s (password from RELAY_ADMIN_PASSWORD).\n", email)
	}
	if err != nil {
		return fmt.Errorf("bootstrap admin: print: %w", err)
	}
	return nil
}

// generatePassword is 18 random bytes, base64url (24 characters).
func generatePassword() string {
	b := make([]byte, 18)
	rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}
