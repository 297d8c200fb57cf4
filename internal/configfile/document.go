package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Document is one YAML document of a file: a kind and its spec.
type Document struct {
	Kind   Kind
	Source Source
	spec   spec
}

// Name is the document's natural key, as a plan shows it.
func (d Document) Name() string { return d.spec.key() }

// Source is where a document came from: the file (or "-" for stdin), its
// position among the file's documents (1-based) and its first line.
type Source struct {
	File  string
	Index int
	Line  int
}

func (s Source) String() string {
	if s.File == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", s.File, s.Index)
}

// DocError is a problem with one document.
type DocError struct {
	Source Source
	Kind   string // as written, when known
	Name   string // the natural key, when known
	Err    error
}

func (e *DocError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	if e.Source.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Source.Line)
	}
	if e.Kind != "" {
		b.WriteString(" " + e.Kind)
		if e.Name != "" {
			b.WriteString(" " + e.Name)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DocError) Unwrap() error { return e.Err }

// The input caps: what one apply reads, over all its files, so a runaway
// generator or a wrong path cannot make the CLI (and the control plane
// behind it) work through an unbounded input.
const (
	MaxInputBytes = 16 << 20 // 16 MiB over all files
	MaxDocuments  = 50000
)

// File is one input of an apply: its name as errors cite it ("-" for stdin)
// and its bytes.
type File struct {
	Name string
	Data []byte
}

// Read reads every path: a file, a directory (its *.yaml and *.yml files,
// sorted by name, not recursive) or "-" for stdin, within MaxInputBytes over
// all of them.
func Read(paths []string, stdin io.Reader) ([]File, error) {
	var out []File
	total := 0
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := readCapped(f, stdin, MaxInputBytes-total)
			if err != nil {
				return nil, err
			}
			total += len(data)
			out = append(out, File{Name: f, Data: data})
		}
	}
	return out, nil
}

// ParseAll decodes the documents of files, within MaxDocuments. Documents
// that are empty (a trailing `---`) are skipped.
func ParseAll(files []File) ([]Document, error) {
	var docs []Document
	for _, f := range files {
		d, err := Parse(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		if docs = append(docs, d...); len(docs) > MaxDocuments {
			return nil, fmt.Errorf("read %s: more than %d documents in one apply; split the files", f.Name, MaxDocuments)
		}
	}
	return docs, nil
}

// Load reads and decodes the documents of every path (Read, then ParseAll).
func Load(paths []string, stdin io.Reader) ([]Document, error) {
	files, err := Read(paths, stdin)
	if err != nil {
		return nil, err
	}
	return ParseAll(files)
}

// readCapped reads a file ("-": stdin) of at most left bytes.
func readCapped(f string, stdin io.Reader, left int) ([]byte, error) {
	r := stdin
	if f != "-" {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		defer fh.Close()
		r = fh
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(left)+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f, err)
	}
	if len(data) > left {
		return nil, fmt.Errorf("read %s: the files of one apply are larger than %d bytes; split them", f, MaxInputBytes)
	}
	return data, nil
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{"-"}, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml or *.yml files", p)
	}
	slices.Sort(files)
	return files, nil
}

// Parse decodes the documents of one file; name is used in errors. A file
// past MaxInputBytes or MaxDocuments is refused.
func Parse(name string, data []byte) ([]Document, error) {
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes; split it", name, MaxInputBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		src := Source{File: name, Index: i}
		if err != nil {
			return nil, &DocError{Source: src, Err: err}
		}
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			continue
		}
		if len(docs) == MaxDocuments {
			return nil, &DocError{Source: src, Err: fmt.Errorf("more than %d documents in one apply; split the files", MaxDocuments)}
		}
		d, err := decodeDocument(src, n.Content[0])
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
}

func decodeDocument(src Source, n *yaml.Node) (Document, error) {
	src.Line = n.Line
	fail := func(kind string, name string, err error) (Document, error) {
		return Document{}, &DocError{Source: src, Kind: kind, Name: name, Err: err}
	}
	if n.Kind != yaml.MappingNode {
		return fail("", "", errors.New("a document is a mapping with kind and spec"))
	}
	var kindName string
	var specNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "kind":
			kindName = v.Value
		case "spec":
			specNode = v
		default:
			return fail("", "", fmt.Errorf("line %d: unknown field %q (a document has kind and spec)", k.Line, k.Value))
		}
	}
	kind, ok := ParseKind(kindName)
	if !ok {
		if kindName == "" {
			return fail("", "", errors.New("kind is required"))
		}
		return fail(kindName, "", fmt.Errorf("unknown kind (one of %s)", strings.Join(kindNames[:], ", ")))
	}
	if specNode == nil || specNode.Tag == "!!null" {
		return fail(kindName, "", errors.New("spec is required"))
	}
	s := newSpec(kind)
	if err := knownFields(specNode, reflect.TypeOf(s).Elem(), "spec"); err != nil {
		return fail(kindName, "", err)
	}
	if err := specNode.Decode(s); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) { // one line per field; keep the error on one line
			err = errors.New(strings.Join(te.Errors, "; "))
		}
		return fail(kindName, "", err)
	}
	s.normalize()
	if err := s.check(); err != nil {
		return fail(kindName, s.key(), err)
	}
	return Document{Kind: kind, Source: src, spec: s}, nil
}

// knownFields refuses a mapping key that t has no field for, so that a typo
// is an error instead of a silently ignored setting. (yaml.v3's KnownFields
// works on a Decoder only, not on a Node.)
func knownFields(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // the decoder reports the type mismatch
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Tag == "!!merge" { // <<: *anchor; the anchor's own keys are checked where it is defined
				continue
			}
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				return fmt.Errorf("line %d: unknown field %s.%s", k.Line, path, k.Value)
			}
			if err := knownFields(n.Content[i+1], f.Type, path+"."+k.Value); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := knownFields(c, t.Elem(), fmt.Sprintf("%s.%d", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}
