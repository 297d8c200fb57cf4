package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestResponseCacheSettings_SemanticDomains(t *testing.T) {
	emb := uuid.MustParse("00000000-0000-0000-0000-0000000000e1")
	chat := uuid.MustParse("00000000-0000-0000-0000-0000000000c1")
	sum := sha256.Sum256([]byte("You answer support questions."))
	s := ResponseCacheSettings{Semantic: []SemanticDomainSettings{
		{Name: "support", Models: []ID{chat}, Metadata: map[string]string{"app": "help"}, SystemSHA256: []string{hex.EncodeToString(sum[:])}, EmbeddingsModel: emb},
		{Name: "faq", EmbeddingsModel: emb, Threshold: 0.8},
	}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	c := s.ResponseCache()
	if len(c.Semantic) != 2 || c.Semantic[0].Threshold != DefaultSemanticThreshold || c.Semantic[1].Threshold != 0.8 {
		t.Fatalf("domains %+v", c.Semantic)
	}
	d := &c.Semantic[0]
	if !d.Takes(chat, map[string]string{"app": "help", "x": "y"}) {
		t.Error("a matching request is not taken")
	}
	if d.Takes(chat, map[string]string{"app": "other"}) || d.Takes(chat, nil) || d.Takes(emb, map[string]string{"app": "help"}) {
		t.Error("a request the rules leave out is taken")
	}
	if !d.TakesSystem(sum) || d.TakesSystem(sha256.Sum256([]byte("other"))) {
		t.Error("system prompt digest not matched")
	}
	if !c.Semantic[1].Takes(emb, nil) || !c.Semantic[1].TakesSystem(sum) {
		t.Error("a domain with no rules takes every request")
	}
	for name, bad := range map[string]SemanticDomainSettings{
		"threshold":        {Name: "a", EmbeddingsModel: emb, Threshold: 1.5},
		"name":             {Name: "Bad Name", EmbeddingsModel: emb},
		"embeddings_model": {Name: "a"},
		"system_sha256":    {Name: "a", EmbeddingsModel: emb, SystemSHA256: []string{"abc"}},
	} {
		s := ResponseCacheSettings{Semantic: []SemanticDomainSettings{bad}}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	twice := ResponseCacheSettings{Semantic: []SemanticDomainSettings{{Name: "a", EmbeddingsModel: emb}, {Name: "a", EmbeddingsModel: emb}}}
	if err := twice.Validate(); err == nil {
		t.Error("a domain named twice is valid")
	}
}
