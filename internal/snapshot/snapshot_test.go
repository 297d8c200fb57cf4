package snapshot

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/relay-llm/relay/internal/wire"
)

// fixture is a small catalog: one team and project, a service account with a
// policy, two hosts with keys, a model bound to both hosts, keys and a token.
type fixture struct {
	data               *Data
	team               *Team
	proj               *Project
	sa                 *ServiceAccount
	policy, other      *Policy
	hostA, hostB       *Host
	model              *Model
	bindA, bindB       *Binding
	keyA1, keyA2, keyB *HostKey
	relayKey, userKey  *RelayKey
	user               *User
	group              *Group
	groupBinding       *PolicyBinding
	token              *InferenceToken
}

func hashOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func newFixture() *fixture {
	f := &fixture{}
	f.team = &Team{ID: uuid.New(), Slug: "acme"}
	f.proj = &Project{ID: uuid.New(), TeamID: f.team.ID, Slug: "web"}
	f.hostA = &Host{ID: uuid.New(), Slug: "a", Enabled: true}
	f.hostB = &Host{ID: uuid.New(), Slug: "b", Enabled: true}
	f.model = &Model{ID: uuid.New(), Name: "gpt-x"}
	f.bindA = &Binding{ID: uuid.New(), ModelID: f.model.ID, HostID: f.hostA.ID, Shape: wire.ShapeOpenAI, Position: 2, Enabled: true}
	f.bindB = &Binding{ID: uuid.New(), ModelID: f.model.ID, HostID: f.hostB.ID, Shape: wire.ShapeAnthropic, Position: 1, Enabled: true}
	f.keyA1 = &HostKey{ID: uuid.New(), HostID: f.hostA.ID, Slug: "k1", Position: 1, Enabled: true, Usable: true, Secret: NewSecret("s1")}
	f.keyA2 = &HostKey{ID: uuid.New(), HostID: f.hostA.ID, Slug: "k2", Position: 0, Enabled: true, Usable: true, Secret: NewSecret("s2")}
	f.keyB = &HostKey{ID: uuid.New(), HostID: f.hostB.ID, Slug: "k", Enabled: true, Usable: true, Secret: NewSecret("s3")}
	f.policy = &Policy{ID: uuid.New(), Slug: "default", Models: map[ID]struct{}{f.model.ID: {}}, HostKeys: map[ID]struct{}{}, AllHostKeys: true}
	f.other = &Policy{ID: uuid.New(), Slug: "other", AllModels: true, AllHostKeys: true}
	f.sa = &ServiceAccount{ID: uuid.New(), ProjectID: f.proj.ID, Slug: "svc", PolicyID: f.policy.ID}
	f.relayKey = &RelayKey{ID: uuid.New(), Hash: hashOf("sk-wr-one"), ProjectID: f.proj.ID, ServiceAccountID: f.sa.ID}
	f.user = &User{ID: uuid.New(), Email: "u@example.com"}
	f.group = &Group{ID: uuid.New(), Slug: "eng", Members: map[ID]struct{}{f.user.ID: {}}}
	f.groupBinding = &PolicyBinding{ID: uuid.New(), ProjectID: f.proj.ID, PolicyID: f.other.ID, SubjectKind: SubjectGroup, SubjectID: f.group.ID}
	f.userKey = &RelayKey{ID: uuid.New(), Hash: hashOf("sk-wr-user"), ProjectID: f.proj.ID, UserID: f.user.ID}
	f.token = &InferenceToken{ID: uuid.New(), Hash: hashOf("tok"), UserID: f.user.ID, ProjectID: f.proj.ID, ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.data = &Data{
		Teams: []*Team{f.team}, Projects: []*Project{f.proj}, Users: []*User{f.user}, Groups: []*Group{f.group},
		ServiceAccounts: []*ServiceAccount{f.sa}, Hosts: []*Host{f.hostA, f.hostB}, Models: []*Model{f.model},
		Bindings: []*Binding{f.bindA, f.bindB}, HostKeys: []*HostKey{f.keyA1, f.keyA2, f.keyB},
		Policies: []*Policy{f.policy, f.other}, PolicyBindings: []*PolicyBinding{f.groupBinding},
		RelayKeys: []*RelayKey{f.relayKey, f.userKey}, InferenceTokens: []*InferenceToken{f.token},
	}
	return f
}

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestBuild_IndexesInRoutingOrder(t *testing.T) {
	f := newFixture()
	s := Build(f.data, 1, now)
	if s.ModelByName("gpt-x") != f.model || s.HostBySlug("b") != f.hostB {
		t.Fatal("lookup by name failed")
	}
	if got := s.Bindings(f.model.ID); len(got) != 2 || got[0] != f.bindB || got[1] != f.bindA {
		t.Fatalf("bindings not in position order: %v", got)
	}
	if got := s.HostKeys(f.hostA.ID); len(got) != 2 || got[0] != f.keyA2 {
		t.Fatalf("host keys not in position order")
	}
}

func TestAuthenticate_ResolvesPolicyInOrder(t *testing.T) {
	f := newFixture()
	s := Build(f.data, 1, now)

	c, res := s.Authenticate(hashOf("sk-wr-one"), now)
	if res != AuthOK || c.Policy != f.policy || c.TeamID != f.team.ID {
		t.Fatalf("service account key: %v %+v", res, c)
	}
	// A key's own policy wins over the service account's.
	f.relayKey.PolicyID = f.other.ID
	s = Build(f.data, 2, now)
	if c, _ := s.Authenticate(hashOf("sk-wr-one"), now); c.Policy != f.other {
		t.Fatal("key's own policy not preferred")
	}
	// A user's key falls through to the group's policy binding.
	if c, res := s.Authenticate(hashOf("sk-wr-user"), now); res != AuthOK || c.Policy != f.other {
		t.Fatalf("user key: %v %+v", res, c)
	}
	if c, res := s.Authenticate(hashOf("tok"), now); res != AuthOK || c.Kind != CredentialInferenceToken || c.Policy != f.other {
		t.Fatalf("token: %v %+v", res, c)
	}
	if _, res := s.Authenticate(hashOf("nope"), now); res != AuthUnknown {
		t.Fatalf("unknown = %v", res)
	}
}

func TestAuthenticate_RejectsRevokedExpiredAndDisabled(t *testing.T) {
	f := newFixture()
	f.relayKey.RevokedAt = now.Add(time.Minute) // revoked with a grace period: still valid now
	s := Build(f.data, 1, now)
	if _, res := s.Authenticate(hashOf("sk-wr-one"), now); res != AuthOK {
		t.Fatalf("within grace = %v", res)
	}
	if _, res := s.Authenticate(hashOf("sk-wr-one"), now.Add(time.Minute)); res != AuthRevoked {
		t.Fatalf("after grace = %v", res)
	}
	f.userKey.ExpiresAt = now
	f.token.RevokedAt = now.Add(-time.Second)
	s = Build(f.data, 2, now)
	if _, res := s.Authenticate(hashOf("sk-wr-user"), now); res != AuthExpired {
		t.Fatalf("expired = %v", res)
	}
	if _, res := s.Authenticate(hashOf("tok"), now); res != AuthRevoked {
		t.Fatalf("revoked token = %v", res)
	}
	f.userKey.ExpiresAt = time.Time{}
	f.user.Disabled = true
	s = Build(f.data, 3, now)
	if _, res := s.Authenticate(hashOf("sk-wr-user"), now); res != AuthDisabled {
		t.Fatalf("disabled user = %v", res)
	}
}

// TestApply_EqualsFullBuild checks copy-on-write against a full rebuild: for
// a series of changes, the incremental snapshot must index exactly what a
// fresh build of the same rows indexes, and the parent must stay untouched.
func TestApply_EqualsFullBuild(t *testing.T) {
	f := newFixture()
	base := Build(f.data, 1, now)
	baseBindings := base.Bindings(f.model.ID)

	// Move binding A ahead, rename the model, delete key A1, add a host key, move the relay key's hash.
	bindA2 := *f.bindA
	bindA2.Position = 0
	model2 := *f.model
	model2.Name = "gpt-y"
	newKey := &HostKey{ID: uuid.New(), HostID: f.hostB.ID, Slug: "k0", Position: -1, Enabled: true, Usable: true}
	rk2 := *f.relayKey
	rk2.Hash = hashOf("sk-wr-rotated")
	group2 := &Group{ID: f.group.ID, Slug: "eng", Members: map[ID]struct{}{}}
	changes := &Changes{
		Bindings:  Delta[Binding]{Upserts: []*Binding{&bindA2}},
		Models:    Delta[Model]{Upserts: []*Model{&model2}},
		HostKeys:  Delta[HostKey]{Upserts: []*HostKey{newKey}, Deletes: []ID{f.keyA1.ID}},
		RelayKeys: Delta[RelayKey]{Upserts: []*RelayKey{&rk2}},
		Groups:    Delta[Group]{Upserts: []*Group{group2}},
	}
	inc := base.Apply(changes, 2, now)

	full := *f.data
	full.Bindings = []*Binding{&bindA2, f.bindB}
	full.Models = []*Model{&model2}
	full.HostKeys = []*HostKey{f.keyA2, f.keyB, newKey}
	full.RelayKeys = []*RelayKey{&rk2, f.userKey}
	full.Groups = []*Group{group2}
	want := Build(&full, 2, now)
	if !reflect.DeepEqual(inc, want) {
		t.Fatalf("incremental snapshot differs from a full build\ninc:  %+v\nwant: %+v", inc, want)
	}
	// The parent is unchanged.
	if base.ModelByName("gpt-x") == nil || base.HostKey(f.keyA1.ID) == nil || !reflect.DeepEqual(base.Bindings(f.model.ID), baseBindings) {
		t.Fatal("Apply modified its parent")
	}
	if _, res := base.Authenticate(hashOf("sk-wr-one"), now); res != AuthOK {
		t.Fatal("parent lost the old hash")
	}
	if _, res := inc.Authenticate(hashOf("sk-wr-one"), now); res != AuthUnknown {
		t.Fatal("old hash still valid after the change")
	}
	// Unchanged kinds share storage with the parent.
	if reflect.ValueOf(inc.policies).UnsafePointer() != reflect.ValueOf(base.policies).UnsafePointer() {
		t.Fatal("an unchanged kind was copied")
	}
	if inc.Host(f.hostA.ID) != base.Host(f.hostA.ID) {
		t.Fatal("an unchanged row was rebuilt")
	}
	// The user lost its group, so its key no longer resolves a policy.
	if c, _ := inc.Authenticate(hashOf("sk-wr-user"), now); c.Policy != nil {
		t.Fatal("group membership change not applied")
	}
}

func TestSecret_NeverPrints(t *testing.T) {
	s := NewSecret("sk-live-secret")
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), fmt.Sprint(HostKey{Secret: s})} {
		if strings.Contains(out, "sk-live-secret") {
			t.Fatalf("secret printed: %s", out)
		}
	}
	if s.Reveal() != "sk-live-secret" {
		t.Fatal("Reveal lost the value")
	}
}
