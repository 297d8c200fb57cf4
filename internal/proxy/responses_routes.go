package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/wire"
)

// The stored-response routes, /v1/responses/{id}[/input_items|/cancel],
// served from the response store in the caller's project: another
// project's id is a 404, exactly like a missing one. They read no body and
// reach no upstream.

// serveStoredResponse answers GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items and POST /v1/responses/{id}/cancel.
func (h *Handler) serveStoredResponse(rq *request, rest string) {
	defer rq.finish()
	rq.call.Dialect = wire.DialectOpenAI
	id, sub, _ := strings.Cut(rest, "/")
	method := rq.r.Method
	want := map[string]string{"": "GET or DELETE", "input_items": "GET", "cancel": "POST"}[sub]
	switch {
	case want == "" || id == "":
		rq.fail(wire.Errorf(wire.ErrNotFound, "No such endpoint: %s %s.", method, rq.r.URL.Path))
		return
	case !strings.Contains(want, method):
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use %s for %s.", want, rq.r.URL.Path))
		return
	}
	if !rq.authenticate() {
		return
	}
	rq.recorded = false // no model, no usage: nothing to bill
	ctx, cancel := context.WithTimeout(rq.r.Context(), storeTimeout)
	defer cancel()
	if method == http.MethodDelete {
		err := h.responses.Delete(ctx, rq.project(), id)
		if o, oerr := h.objects.Get(ctx, rq.caller.ProjectID, objects.KindResponse, id); oerr == nil {
			// An openai_responses upstream holds it too: delete it there,
			// with the host key that made it. Its answer is the answer,
			// unless it no longer knew the id Relay just deleted.
			status, body, ok := rq.callObject(ctx, o, "")
			if !ok {
				return
			}
			if status < 300 || status == http.StatusNotFound {
				_ = h.objects.Delete(ctx, rq.caller.ProjectID, objects.KindResponse, id)
			}
			if status != http.StatusNotFound || err != nil {
				rq.respond(status, "application/json", body)
				return
			}
		}
		switch {
		case errors.Is(err, respstore.ErrNotFound):
			rq.fail(notFoundResponse(id))
		case err != nil:
			rq.storeFailed(err)
		default:
			b := append(rq.out[:0], `{"id":`...)
			b = wire.AppendString(b, id)
			rq.out = append(b, `,"object":"response","deleted":true}`...)
			rq.respond(http.StatusOK, "application/json", rq.out)
		}
		return
	}
	loaded, err := h.responses.Load(ctx, rq.project(), id, nil)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	rec := loaded.Response
	switch {
	case rec == nil && sub != "cancel":
		// Not in Relay's store (too large, or evicted) but maybe upstream.
		if o, oerr := h.objects.Get(ctx, rq.caller.ProjectID, objects.KindResponse, id); oerr == nil {
			if status, body, ok := rq.callObject(ctx, o, sub); ok {
				rq.respond(status, "application/json", body)
			}
			return
		}
		rq.fail(notFoundResponse(id))
		return
	case rec == nil:
		rq.fail(notFoundResponse(id))
		return
	case rec.Dropped > 0:
		rq.fail(wire.Errorf(wire.ErrNotFound, "%s", droppedMessage(rec, h.responses.Limits())))
		return
	}
	switch sub {
	case "":
		rq.respond(http.StatusOK, "application/json", rec.Response)
	case "cancel":
		// Relay serves no background responses: every stored one is done.
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "response_id", Msg: "Only responses created with background: true can be cancelled; '" + id + "' has finished."})
	case "input_items":
		rq.listInputItems(rec)
	}
}

func notFoundResponse(id string) error {
	return &wire.Error{Kind: wire.ErrNotFound, Param: "response_id", Msg: "Response with id '" + id + "' not found."}
}

func (rq *request) storeFailed(err error) {
	rq.h.log.Warn("response store", "request_id", rq.id, "error", err)
	rq.fail(wire.Errorf(wire.ErrUnavailable, "Relay's response store is unavailable; retry shortly."))
}

// listInputItems answers one page of a response's input items.
func (rq *request) listInputItems(rec *respstore.Record) {
	rq.listItems(rec.Input, "this response's input")
}

// listItems answers one page of items (a response's input, a
// conversation's items), as the spec's ResponseItemList and
// ConversationItemList: limit (1–100, 20), order (desc by default) and
// after (an item id); where names the list in a 404 for after.
func (rq *request) listItems(list []json.RawMessage, where string) {
	q := rq.r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "limit", Msg: "limit must be an integer from 1 to 100."})
			return
		}
		limit = n
	}
	items := append([]json.RawMessage(nil), list...)
	switch q.Get("order") {
	case "", "desc":
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	case "asc":
	default:
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "order", Msg: "order must be asc or desc."})
		return
	}
	if after := q.Get("after"); after != "" {
		at := -1
		for i, it := range items {
			if respstore.ItemID(it) == after {
				at = i
				break
			}
		}
		if at < 0 {
			rq.fail(&wire.Error{Kind: wire.ErrNotFound, Param: "after", Msg: "Item with id '" + after + "' not found in " + where + "."})
			return
		}
		items = items[at+1:]
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	rq.writeItemList(items, more)
}

// callObject sends the caller's GET or DELETE of a stored response to the
// openai_responses host key that holds it upstream and returns the
// upstream's status and body (secret-free, its headers copied); ok false
// when it answered the caller itself.
func (rq *request) callObject(ctx context.Context, o objects.Object, sub string) (status int, body []byte, ok bool) {
	host, key := rq.snap.Host(o.HostID), rq.snap.HostKey(o.HostKeyID)
	if host == nil || key == nil {
		rq.fail(wire.Errorf(wire.ErrNotFound, "Response with id '%s' not found: the host key that holds it is no longer in the catalog.", o.ID))
		return 0, nil, false
	}
	path := wire.UpstreamPath(wire.InboundResponses, wire.ShapeOpenAIResponses) + "/" + o.ID
	if sub != "" {
		path += "/" + sub
	}
	url := wire.JoinURL(host.BaseURL, path)
	if q := rq.r.URL.RawQuery; q != "" {
		url += "?" + q
	}
	req, err := http.NewRequestWithContext(ctx, rq.r.Method, url, nil)
	if err != nil {
		rq.fail(wire.Errorf(wire.ErrUpstream, "The host that holds this response has an invalid base URL."))
		return 0, nil, false
	}
	req.Header = appendOutboundHeaders(make(http.Header), rq.r.Header, wire.ShapeOpenAIResponses, host)
	if err := rq.h.authorizers.Authorize(ctx, req, nil, profile.Lookup(host.Profile), wire.ShapeOpenAIResponses, host, key); err != nil {
		rq.fail(wire.Errorf(wire.ErrUpstream, "The host key that holds this response could not produce a credential."))
		return 0, nil, false
	}
	resp, err := rq.h.transport.RoundTrip(req)
	if err != nil {
		what, _ := describe(err, ctx)
		rq.fail(wire.Errorf(wire.ErrUpstream, "The host that holds this response could not be reached: %s.", what))
		return 0, nil, false
	}
	body, _ = io.ReadAll(io.LimitReader(resp.Body, maxEventBytes))
	resp.Body.Close()
	if s := key.Secret.Reveal(); s != "" && bytes.Contains(body, []byte(s)) {
		body = bytes.ReplaceAll(body, []byte(s), []byte("[redacted]"))
	}
	copyResponseHeaders(rq.w.Header(), resp.Header)
	return resp.StatusCode, body, true
}
