package configfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
)

func TestParse_AnchorsAndEmptyDocuments(t *testing.T) {
	t.Parallel()
	docs, err := configfile.Parse("hosts.yaml", []byte(`
---
kind: Host
spec: &base
  slug: a
  provider: custom
  base_url: http://10.0.0.1:8000/v1
  total_timeout_ms: 30000
---
# an empty document is skipped
---
kind: Host
spec:
  <<: *base
  slug: b
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Name() != "a" || docs[1].Name() != "b" || docs[1].Source.String() != "hosts.yaml:3" {
		t.Errorf("docs = %+v", docs)
	}
}

func TestLoad_DirectoryReadsYAMLFilesInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.yml"), []byte("kind: Team\nspec: {slug: b}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: Team\nspec: {slug: a}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not yaml"), 0o644)
	docs, err := configfile.Load([]string{dir, "-"}, strings.NewReader("kind: Team\nspec: {slug: c}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range docs {
		names = append(names, d.Source.String()+" "+d.Name())
	}
	want := []string{filepath.Join(dir, "a.yaml") + ":1 a", filepath.Join(dir, "b.yml") + ":1 b", "-:1 c"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("got %q; want %q", names, want)
	}
	if _, err := configfile.Load([]string{t.TempDir()}, nil); err == nil || !strings.Contains(err.Error(), "no *.yaml or *.yml files") {
		t.Errorf("empty dir: err = %v", err)
	}
}
