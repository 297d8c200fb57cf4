package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/relay-llm/relay/internal/wire"
)

// bigData is the benchmark catalog: 100k relay keys, 5k models, 10k
// bindings, 20k host keys over 100 hosts, 1k projects.
func bigData() *Data {
	d := &Data{}
	team := &Team{ID: uuid.New(), Slug: "t"}
	d.Teams = append(d.Teams, team)
	for i := range 1000 {
		d.Projects = append(d.Projects, &Project{ID: uuid.New(), TeamID: team.ID, Slug: fmt.Sprintf("p%d", i)})
	}
	pol := &Policy{ID: uuid.New(), Slug: "all", AllModels: true, AllHostKeys: true}
	d.Policies = append(d.Policies, pol)
	for i := range 1000 {
		d.ServiceAccounts = append(d.ServiceAccounts, &ServiceAccount{ID: uuid.New(), ProjectID: d.Projects[i].ID, Slug: "sa", PolicyID: pol.ID})
	}
	for i := range 100 {
		d.Hosts = append(d.Hosts, &Host{ID: uuid.New(), Slug: fmt.Sprintf("h%d", i), Enabled: true})
	}
	for i := range 20000 {
		d.HostKeys = append(d.HostKeys, &HostKey{ID: uuid.New(), HostID: d.Hosts[i%100].ID, Slug: fmt.Sprintf("k%d", i), Enabled: true, Usable: true, Position: i})
	}
	for i := range 5000 {
		d.Models = append(d.Models, &Model{ID: uuid.New(), Name: fmt.Sprintf("model-%d", i)})
	}
	for i := range 10000 {
		d.Bindings = append(d.Bindings, &Binding{ID: uuid.New(), ModelID: d.Models[i%5000].ID, HostID: d.Hosts[i%100].ID, Shape: wire.ShapeOpenAI, Position: i / 5000, Enabled: true})
	}
	for i := range 100000 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		sa := d.ServiceAccounts[i%1000]
		d.RelayKeys = append(d.RelayKeys, &RelayKey{ID: uuid.New(), Hash: sha256.Sum256(b[:]), ProjectID: sa.ProjectID, ServiceAccountID: sa.ID})
	}
	return d
}

func BenchmarkBuild_Full(b *testing.B) {
	d := bigData()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		Build(d, uint64(i), now)
	}
}

func BenchmarkApply_OneRelayKey(b *testing.B) {
	d := bigData()
	s := Build(d, 1, now)
	changed := *d.RelayKeys[42]
	changed.RevokedAt = now
	c := &Changes{RelayKeys: Delta[RelayKey]{Upserts: []*RelayKey{&changed}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Apply(c, uint64(i), now)
	}
}

func BenchmarkApply_OneBinding(b *testing.B) {
	d := bigData()
	s := Build(d, 1, now)
	changed := *d.Bindings[7]
	changed.Enabled = false
	c := &Changes{Bindings: Delta[Binding]{Upserts: []*Binding{&changed}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Apply(c, uint64(i), now)
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	d := bigData()
	s := Build(d, 1, now)
	h := d.RelayKeys[500].Hash
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, res := s.Authenticate(h, now); res != AuthOK {
			b.Fatal(res)
		}
	}
}
