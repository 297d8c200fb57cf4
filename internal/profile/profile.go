// Package profile holds host profiles: how Relay addresses and
// authenticates a host beyond what its binding shape says. A profile is
// data — a row of the registry (registry.go) naming the binding shapes it
// serves, its parameters, and its quirks: the URL layout, how the host
// key's secret is presented, the request body's rewrites and the answer's
// quirks. The proxy asks a host's profile for the URL and body of an
// upstream call (Profile.URL, Profile.Body) and has the call's credential
// set by an Authorizer (Authorizers.Authorize), which may mint and cache
// tokens per host key (Entra ID, Google service accounts) or sign the
// request (SigV4).
//
// The package never touches Postgres or the snapshot's construction; it
// reads a snapshot.Host's Profile and ProfileParams and a host key's
// secret, and holds no secret in anything it logs or returns.
package profile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/relay-llm/relay/internal/wire"
)

// Profile is one row of the registry.
type Profile struct {
	// Name is what hosts.profile holds.
	Name string
	// Title and Doc are for the console and docs/profiles.md.
	Title string
	Doc   string
	// Shapes are the binding shapes the profile serves.
	Shapes []wire.Shape
	// Params are the profile's parameters (hosts.profile_params); no
	// other name is accepted.
	Params []Param
	// Auth is how the host key's secret is presented: the first rule whose
	// Param is set (or that names none) applies.
	Auth []AuthRule
	// Paths maps a shape to the URL path template that replaces its public
	// path on this host; a shape not in it keeps the public path
	// (wire.JoinURL of the base URL and the public path). See URL for the
	// placeholders.
	Paths map[wire.Shape]string
	// Query is a query template appended to every call's query
	// ("api-version={api_version}"); a pair whose parameter is unset is
	// left out.
	Query string
	// Rewrites change the request body per shape (Body).
	Rewrites []Rewrite
	// Answer is how the host's answers differ from its shape's public API.
	Answer Answer
}

// Param is one parameter of a profile.
type Param struct {
	Name     string
	Required bool
	// Kind says what a value may be.
	Kind ParamKind
	Doc  string
}

// ParamKind is what a parameter's value may be.
type ParamKind uint8

// Parameter kinds.
const (
	// ParamSegment goes into a URL path or query: letters, digits, '.',
	// '_', '-' and ':' only, at most 128 bytes.
	ParamSegment ParamKind = iota
	// ParamURL is an http or https URL (a token endpoint), at most 2048 bytes.
	ParamURL
	// ParamText is printable text, at most 256 bytes.
	ParamText
)

// Auth is how a host key's secret is presented to the host.
type Auth string

// Ways to present a credential.
const (
	// AuthShape presents the secret as the binding shape's public API
	// does: Authorization: Bearer, x-api-key (anthropic), x-goog-api-key
	// (gemini).
	AuthShape Auth = ""
	// AuthBearer is Authorization: Bearer <secret> whatever the shape.
	AuthBearer Auth = "bearer"
	// AuthAPIKey is Azure's api-key header.
	AuthAPIKey Auth = "api_key"
	// AuthEntra is a Microsoft Entra ID token from the client-credentials
	// grant (tenant_id, client_id; the secret is the client secret), as
	// Authorization: Bearer.
	AuthEntra Auth = "entra"
	// AuthGoogle is a Google OAuth2 access token from a service account's
	// JWT bearer grant (the secret is the service-account JSON), as
	// Authorization: Bearer.
	AuthGoogle Auth = "google_service_account"
	// AuthSigV4 signs the request with AWS Signature Version 4.
	AuthSigV4 Auth = "sigv4"
	// AuthNone sends no credential (a local server).
	AuthNone Auth = "none"
)

// AuthRule picks an Auth when Param is set; a rule with no Param always
// applies.
type AuthRule struct {
	Param string
	Auth  Auth
}

// Rewrite changes the top-level members of a request body for one shape
// ("" is every shape) and, when Op is set, one operation (the public path
// without its version: "/chat/completions", "/embeddings", "/messages").
type Rewrite struct {
	Shape wire.Shape
	Op    string
	// Drop removes members.
	Drop []string
	// Rename moves a member to another name; a member already under the
	// new name gives way (the caller's newer spelling wins).
	Rename []Pair
	// Default sets members the body lacks; Value is JSON.
	Default []Pair
	// Roles renames message roles in messages[].role (developer → system).
	Roles []Pair
	// HeaderLists move list headers of the caller's into the body.
	HeaderLists []HeaderList
}

// HeaderList moves a request header that lists names, comma-separated
// (anthropic-beta), into a body member that holds them as a JSON array of
// strings, for hosts that read them only from the body (Bedrock's
// InvokeModel). Only the names in Allow go (every name when Allow is
// empty): a host that refuses a name it does not know ("invalid beta
// flag") then never sees one. A body that already has the member keeps
// it, and a header with no allowed name adds nothing.
type HeaderList struct {
	Header, Member string
	Allow          []string
}

// Pair is a From and a To (or a name and a JSON value for Default).
type Pair struct{ From, To string }

// Answer is how a host's answers differ from its shape's public API.
type Answer struct {
	// StreamUsage says when a chat stream carries usage. Recorded for the
	// translator and the docs; the proxy reads only the Drop of
	// stream_options today.
	StreamUsage StreamUsage
	// Reasoning names the member of a chat message or delta that carries
	// the model's reasoning ("reasoning_content", "reasoning"); "" when the
	// host sends none.
	Reasoning string
	// ContentFilter: the host reports content filtering
	// (content_filter_results, finish_reason "content_filter"), carried to
	// the caller.
	ContentFilter bool
}

// StreamUsage says when a host's chat stream carries usage.
type StreamUsage uint8

// When a chat stream carries usage.
const (
	// UsageWhenAsked: with stream_options.include_usage, as OpenAI.
	UsageWhenAsked StreamUsage = iota
	// UsageAlways: in the last chunk, asked or not.
	UsageAlways
	// UsageNever: never; such a stream's upstream usage is recorded as
	// unknown (zero).
	UsageNever
)

// Lookup returns the profile named name; nil for "" (the plain public API)
// and for a name the registry lacks.
func Lookup(name string) *Profile {
	if name == "" {
		return nil
	}
	for i := range registry {
		if registry[i].Name == name {
			return &registry[i]
		}
	}
	return nil
}

// All returns the registry's profiles, by name.
func All() []*Profile {
	out := make([]*Profile, len(registry))
	for i := range registry {
		out[i] = &registry[i]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Serves reports whether the profile serves bindings of shape s.
func (p *Profile) Serves(s wire.Shape) bool {
	for _, x := range p.Shapes {
		if x == s {
			return true
		}
	}
	return false
}

// Param returns the parameter named name.
func (p *Profile) Param(name string) (Param, bool) {
	for _, x := range p.Params {
		if x.Name == name {
			return x, true
		}
	}
	return Param{}, false
}

// AuthFor is the Auth that applies with params.
func (p *Profile) AuthFor(params map[string]string) Auth {
	for _, r := range p.Auth {
		if r.Param == "" || params[r.Param] != "" {
			return r.Auth
		}
	}
	return AuthShape
}

// CheckError is a refused profile or parameter; Field names it as the
// control API reports it ("profile", "profile_params.region").
type CheckError struct {
	Field   string
	Message string
}

func (e *CheckError) Error() string { return e.Field + ": " + e.Message }

// Check vets a host's profile and parameters: the profile is known (or
// ""), every parameter is one of its own with a valid value, and every
// required one is set. It returns the first problem, naming it.
func Check(name string, params map[string]string) error {
	if name == "" {
		for k := range params {
			return &CheckError{Field: "profile_params." + k, Message: "the plain public API (no profile) takes no parameters"}
		}
		return nil
	}
	p := Lookup(name)
	if p == nil {
		return &CheckError{Field: "profile", Message: fmt.Sprintf("unknown profile %q (known: %s)", name, strings.Join(names(), ", "))}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pm, ok := p.Param(k)
		if !ok {
			return &CheckError{Field: "profile_params." + k, Message: fmt.Sprintf("profile %s has no parameter %q (it takes: %s)", p.Name, k, p.paramNames())}
		}
		if msg := pm.Kind.check(params[k]); msg != "" {
			return &CheckError{Field: "profile_params." + k, Message: msg}
		}
	}
	for _, pm := range p.Params {
		if pm.Required && params[pm.Name] == "" {
			return &CheckError{Field: "profile_params." + pm.Name, Message: fmt.Sprintf("profile %s needs %s", p.Name, pm.Name)}
		}
	}
	for _, r := range p.Auth {
		// An auth rule's companions: Entra needs its client too.
		if r.Auth == AuthEntra && r.Param != "" && params[r.Param] != "" && params["client_id"] == "" {
			return &CheckError{Field: "profile_params.client_id", Message: "an Entra ID host (tenant_id set) needs client_id"}
		}
	}
	return nil
}

func names() []string {
	out := make([]string, 0, len(registry))
	for _, p := range All() {
		out = append(out, p.Name)
	}
	return out
}

func (p *Profile) paramNames() string {
	if len(p.Params) == 0 {
		return "none"
	}
	out := make([]string, len(p.Params))
	for i, x := range p.Params {
		out[i] = x.Name
	}
	return strings.Join(out, ", ")
}

// check returns what is wrong with v, or "".
func (k ParamKind) check(v string) string {
	switch k {
	case ParamSegment:
		if v == "" || len(v) > 128 {
			return "must be 1 to 128 characters"
		}
		for i := 0; i < len(v); i++ {
			c := v[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':') {
				return "may hold only letters, digits, '.', '_', '-' and ':'"
			}
		}
	case ParamURL:
		if len(v) > 2048 || !(strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://")) {
			return "must be an http or https URL"
		}
		if msg := printable(v); msg != "" {
			return msg
		}
	default:
		if v == "" || len(v) > 256 {
			return "must be 1 to 256 characters"
		}
		return printable(v)
	}
	return ""
}

func printable(v string) string {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return "may not hold control characters"
		}
	}
	return ""
}
