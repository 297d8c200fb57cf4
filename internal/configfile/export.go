package configfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/relay-llm/relay/openapi/client"
)

// Export writes the control plane's catalog to w as documents: every kind in
// dependency order, the objects of a kind sorted by natural key, and in each
// spec only the fields that differ from their defaults — so the same catalog
// always gives the same bytes, and applying them to an empty control plane
// rebuilds it. Secrets are never written: a host key with an env reference
// exports the reference; a sealed one exports without a secret and a
// comment, and is named in the warnings. parallel bounds the API calls at
// once (0: 4).
func Export(ctx context.Context, c *client.ClientWithResponses, w io.Writer, parallel int) (warnings []string, err error) {
	if parallel <= 0 {
		parallel = 4
	}
	st, err := readState(ctx, c, parallel, false)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, st.notes...)
	for k := range numKinds {
		if n := len(st.extra[k]); n > 0 {
			warnings = append(warnings, fmt.Sprintf("%d %s object(s) left out: they repeat another's natural key", n, k))
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# Relay catalog, written by `relay export`. Apply with `relay apply -f FILE`.\n")
	first := true
	for k := range numKinds {
		for _, o := range st.sorted(k) {
			doc, err := document(o)
			if err != nil {
				return nil, err
			}
			if o.sealed && k == KindHostKey {
				doc.Content[0].HeadComment = "The secret of this host key is sealed in Relay and is not exported: add\n" +
					"secret_ref: env:NAME (or secret, with --allow-secrets) before applying it elsewhere."
				warnings = append(warnings, fmt.Sprintf("HostKey %s: sealed secret not exported; the document has no secret", o.name()))
			}
			if o.sealed && k == KindMCPServer {
				doc.Content[0].HeadComment = "The credential of this MCP server is sealed in Relay and is not exported: add\n" +
					"auth_secret_ref: env:NAME (or auth_secret, with --allow-secrets) before applying it elsewhere."
				warnings = append(warnings, fmt.Sprintf("MCPServer %s: sealed credential not exported; the document has no auth_secret", o.name()))
			}
			if ms, ok := o.spec.(*MCPServerSpec); ok && ms.OAuth != nil && ms.OAuth.sealed {
				doc.Content[0].HeadComment = "The OAuth client secret of this MCP server is sealed in Relay and is not exported: add\n" +
					"oauth.client_secret_ref: env:NAME (or client_secret, with --allow-secrets) before applying it elsewhere."
				warnings = append(warnings, fmt.Sprintf("MCPServer %s: sealed oauth client secret not exported; the document has no client_secret", o.name()))
			}
			if !first {
				buf.WriteString("---\n")
			}
			first = false
			// One encoder per document: yaml.v3 keeps a stream's whole output
			// in one growing slice, which made a 5,000-document export spend
			// most of its time copying it.
			enc := yaml.NewEncoder(&buf)
			enc.SetIndent(2)
			if err := enc.Encode(doc); err != nil {
				return nil, fmt.Errorf("encode %s %s: %w", k, o.name(), err)
			}
			if err := enc.Close(); err != nil {
				return nil, err
			}
		}
	}
	_, err = w.Write(buf.Bytes())
	return warnings, err
}

// document is the YAML document of one object.
func document(o *object) (*yaml.Node, error) {
	spec, err := specNode(o.kind, o.spec)
	if err != nil {
		return nil, err
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		scalar("kind"), scalar(o.kind.String()),
		scalar("spec"), spec,
	}}
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}, nil
}

// specNode writes the fields of s that differ from the kind's defaults, in
// the struct's order, leaving out secrets.
func specNode(k Kind, s spec) (*yaml.Node, error) {
	v := reflect.ValueOf(s).Elem()
	def := reflect.ValueOf(newSpec(k)).Elem()
	t := v.Type()
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("cfg") == "secret" {
			continue
		}
		fv := v.Field(i)
		if reflect.DeepEqual(fv.Interface(), def.Field(i).Interface()) {
			continue
		}
		val, err := valueNode(fv)
		if err != nil {
			return nil, fmt.Errorf("encode %s.%s: %w", k, yamlName(f), err)
		}
		n.Content = append(n.Content, scalar(yamlName(f)), val)
	}
	return n, nil
}

// valueNode encodes a field's value; scalars directly (Node.Encode goes
// through reflection for each, which is most of an export's time), the
// rest through yaml.v3. A string that would read as another type (true,
// 123) is quoted by the encoder because of its !!str tag.
func valueNode(v reflect.Value) (*yaml.Node, error) {
	switch v.Kind() {
	case reflect.String:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.String()}, nil
	case reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}, nil
	case reflect.Int32, reflect.Int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}, nil
	}
	var n yaml.Node
	if err := n.Encode(v.Interface()); err != nil {
		return nil, err
	}
	return &n, nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
