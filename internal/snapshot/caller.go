package snapshot

import "time"

// CredentialKind says how a caller authenticated.
type CredentialKind uint8

// Credential kinds.
const (
	CredentialRelayKey CredentialKind = iota + 1
	CredentialInferenceToken
)

// AuthResult is the outcome of looking a credential up.
type AuthResult uint8

// Authentication outcomes. Everything but AuthOK is a 401.
const (
	AuthOK AuthResult = iota
	AuthUnknown
	AuthExpired
	AuthRevoked
	AuthDisabled
)

// String names the outcome for logs and error messages.
func (r AuthResult) String() string {
	switch r {
	case AuthOK:
		return "ok"
	case AuthUnknown:
		return "unknown credential"
	case AuthExpired:
		return "credential expired"
	case AuthRevoked:
		return "credential revoked"
	case AuthDisabled:
		return "owner disabled"
	}
	return "invalid credential"
}

// Caller is an authenticated principal with its resolved policy.
type Caller struct {
	Kind             CredentialKind
	CredentialID     ID // the relay key's or inference token's ID
	ProjectID        ID
	TeamID           ID
	ServiceAccountID ID
	UserID           ID
	Policy           *Policy // nil when no policy applies: nothing is granted
	Priority         int
	HasPriority      bool
}

// Authenticate looks up a credential by the SHA-256 of its presented value and
// resolves its policy: the relay key's own, else its service account's, else
// the first matching policy binding in its project.
func (s *Snapshot) Authenticate(hash [32]byte, now time.Time) (Caller, AuthResult) {
	if k, ok := s.relayKeyByHash[hash]; ok {
		if !k.RevokedAt.IsZero() && !now.Before(k.RevokedAt) {
			return Caller{}, AuthRevoked
		}
		if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
			return Caller{}, AuthExpired
		}
		if isSet(k.UserID) {
			if u := s.users[k.UserID]; u == nil || u.Disabled {
				return Caller{}, AuthDisabled
			}
		}
		c := Caller{
			Kind:             CredentialRelayKey,
			CredentialID:     k.ID,
			ProjectID:        k.ProjectID,
			ServiceAccountID: k.ServiceAccountID,
			UserID:           k.UserID,
			Priority:         k.Priority,
			HasPriority:      k.HasPriority,
		}
		if p := s.projects[k.ProjectID]; p != nil {
			c.TeamID = p.TeamID
		}
		c.Policy = s.resolvePolicy(k.PolicyID, k.ProjectID, k.ServiceAccountID, k.UserID)
		return c, AuthOK
	}
	if t, ok := s.tokenByHash[hash]; ok {
		if !t.RevokedAt.IsZero() && !now.Before(t.RevokedAt) {
			return Caller{}, AuthRevoked
		}
		if !now.Before(t.ExpiresAt) {
			return Caller{}, AuthExpired
		}
		if u := s.users[t.UserID]; u == nil || u.Disabled {
			return Caller{}, AuthDisabled
		}
		c := Caller{
			Kind:         CredentialInferenceToken,
			CredentialID: t.ID,
			ProjectID:    t.ProjectID,
			UserID:       t.UserID,
		}
		if p := s.projects[t.ProjectID]; p != nil {
			c.TeamID = p.TeamID
		}
		c.Policy = s.resolvePolicy(ID{}, t.ProjectID, ID{}, t.UserID)
		return c, AuthOK
	}
	return Caller{}, AuthUnknown
}

func (s *Snapshot) resolvePolicy(own, project, serviceAccount, user ID) *Policy {
	if isSet(own) {
		if p := s.policies[own]; p != nil {
			return p
		}
	}
	if isSet(serviceAccount) {
		if sa := s.serviceAccounts[serviceAccount]; sa != nil && isSet(sa.PolicyID) {
			if p := s.policies[sa.PolicyID]; p != nil {
				return p
			}
		}
	}
	for _, b := range s.bindingsByProj[project] {
		if s.bindingMatches(b, serviceAccount, user) {
			if p := s.policies[b.PolicyID]; p != nil {
				return p
			}
		}
	}
	return nil
}

func (s *Snapshot) bindingMatches(b *PolicyBinding, serviceAccount, user ID) bool {
	switch b.SubjectKind {
	case SubjectServiceAccount:
		return isSet(serviceAccount) && b.SubjectID == serviceAccount
	case SubjectUser:
		return isSet(user) && b.SubjectID == user
	case SubjectGroup:
		if !isSet(user) {
			return false
		}
		for _, g := range s.userGroups[user] {
			if g == b.SubjectID {
				return true
			}
		}
	}
	return false
}
