package routing

import (
	"net/http"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Headers routing reads.
const (
	// HeaderRoute carries the caller's hint in, and the decision out.
	HeaderRoute = "X-Relay-Route"
	// HeaderSession is the caller's explicit session identity.
	HeaderSession = "X-Relay-Session"
	// HeaderClaudeCodeSession is the session Claude Code names.
	HeaderClaudeCodeSession = "X-Claude-Code-Session-Id"
)

// NewRequest derives what the router needs from a request: its needs from
// the body's facts (the prompt estimate leaves image bytes out), its
// session identity — X-Relay-Session, else x-claude-code-session-id, else
// the body's own (prompt_cache_key, metadata.user_id, conversation,
// previous_response_id), else the stable prefix — and its hint
// (X-Relay-Route, else metadata.relay_route). The proxy and the control
// plane's explain both call it, so they route the same request alike.
func NewRequest(scan *wire.Request, in wire.Inbound, facts *wire.RouteFacts, header http.Header) Request {
	rt := Request{
		Model: scan.Model, Inbound: in,
		Needs: Needs{
			PromptTokens: facts.EstimatedPromptTokens(scan.Size),
			MaxOutput:    scan.MaxTokens,
			Tools:        facts.Tools,
			Images:       facts.Images > 0,
			Structured:   facts.JSONSchema,
		},
	}
	switch {
	case header.Get(HeaderSession) != "":
		rt.Session, rt.SessionFrom = SessionHash("header", []byte(header.Get(HeaderSession))), "x-relay-session"
	case header.Get(HeaderClaudeCodeSession) != "":
		rt.Session, rt.SessionFrom = SessionHash("header", []byte(header.Get(HeaderClaudeCodeSession))), "x-claude-code-session-id"
	case facts.Session != nil:
		rt.Session, rt.SessionFrom = SessionHash("body", facts.Session), facts.SessionFrom
	case facts.Prefix != 0:
		rt.Session, rt.SessionFrom = SessionFromPrefix(facts.Prefix), "prefix"
	}
	if v := header.Get(HeaderRoute); v != "" {
		rt.Hint = ParseHint(v)
	} else if facts.Hint != nil {
		rt.Hint = ParseHint(string(facts.Hint))
	}
	return rt
}

// ExplainBody routes a request as the proxy would — body (a JSON object
// in the inbound shape; model, when not "", names the model instead of the
// body's, as a Gemini path does) and header, by a caller of project — and
// explains where it would go first and why, without sending it. An error
// is the refusal the caller would get; the explanation then still lists
// what was walked.
func (r *Router) ExplainBody(snap *snapshot.Snapshot, policy *snapshot.Policy, project snapshot.ID, model string, in wire.Inbound, body []byte, header http.Header, now time.Time) (Explanation, error) {
	scan, err := wire.ScanRequest(body)
	if model != "" {
		scan.Model = model
		if err == wire.ErrMissingModel {
			err = nil
		}
	}
	if err != nil {
		return Explanation{Model: model, Candidates: []ExplainedBinding{}}, err
	}
	facts, err := scan.Route(body)
	if err != nil {
		return Explanation{Model: scan.Model, Candidates: []ExplainedBinding{}}, err
	}
	req := NewRequest(&scan, in, &facts, header)
	req.Project = project
	var p Plan
	err = r.RouteRequest(snap, policy, &req, now, &p)
	if err != nil && p.Model != nil && (policy == nil || !policy.GrantsModel(p.Model.ID)) {
		// The operator is told why; the caller only that it does not exist.
		err = wire.Errorf(wire.ErrModelNotFound, "The model %q is not granted by the policy; a caller is told it does not exist.", p.Model.Name)
	}
	e := p.Explain(p.FirstChoice(snap))
	if e.Model == "" {
		e.Model = scan.Model
	}
	return e, err
}
