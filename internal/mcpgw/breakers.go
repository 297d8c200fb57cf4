package mcpgw

import (
	"context"
	"errors"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Breakers hold MCP servers that fail, scoped like the model breakers: a
// failure of the server itself (it cannot be reached, its transport
// fails) holds the server, one of a single tool (a call that timed out, an
// internal error of the server answering it) holds that (server, tool)
// only, so one failing tool does not hold the server. internal/bridge
// adapts keypool's breakers (shared by pods on Redis) to it, so this
// package links neither keypool nor the proxy.
type Breakers interface {
	// Acquire claims one call of tool ("" for a tools/list) on server.
	// ok false: the server or the tool is held. Otherwise report must be
	// called once with how the call went (a reason without secrets) and
	// when it ended.
	Acquire(server snapshot.ID, tool string, now time.Time) (report func(o Outcome, reason string, at time.Time), ok bool)
}

// Outcome is how one call to an MCP server went, for its breakers.
type Outcome uint8

// Outcomes.
const (
	// OutcomeSuccess: the server answered (a result, a tool's own error,
	// a JSON-RPC error that is the caller's).
	OutcomeSuccess Outcome = iota + 1
	// OutcomeNeutral: no verdict (the caller went away, the call was
	// refused before it was sent).
	OutcomeNeutral
	// OutcomeServerFailed holds the server: it could not be reached or
	// its transport failed.
	OutcomeServerFailed
	// OutcomeToolFailed holds the tool: its call timed out or the server
	// answered it with an internal error.
	OutcomeToolFailed
)

// noBreakers is the Breakers of a gateway built without them.
type noBreakers struct{}

func (noBreakers) Acquire(snapshot.ID, string, time.Time) (func(Outcome, string, time.Time), bool) {
	return func(Outcome, string, time.Time) {}, true
}

// callOutcome classifies what a tools/call's forwarding returned. ctx is the
// caller's: its cancellation is no verdict on the server.
func callOutcome(ctx context.Context, err error) (Outcome, string) {
	switch {
	case err == nil:
		return OutcomeSuccess, ""
	case ctx.Err() != nil:
		return OutcomeNeutral, ""
	case isToolError(err):
		if rpcCodeOf(err) == codeInternalError {
			return OutcomeToolFailed, "internal error"
		}
		return OutcomeSuccess, ""
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeToolFailed, "timeout"
	}
	return OutcomeServerFailed, "unavailable"
}

// serverOutcome classifies a failure to reach the server at all (to open a
// session, to list its tools): it holds the server, whatever the cause.
func serverOutcome(ctx context.Context, err error) (Outcome, string) {
	switch {
	case err == nil:
		return OutcomeSuccess, ""
	case ctx.Err() != nil:
		return OutcomeNeutral, ""
	case isToolError(err):
		return OutcomeSuccess, ""
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeServerFailed, "timeout"
	}
	return OutcomeServerFailed, "unavailable"
}
