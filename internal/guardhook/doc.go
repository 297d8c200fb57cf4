// Package guardhook calls external guardrails: a policy rule's webhook
// (guardrail.Webhook), the operator's own classifier, asked over HTTP
// whether a request's or an answer's text may pass. Each call is bounded
// by the rule's timeout and by its concurrency cap in this pod, and goes
// through the transport it is given — in Relay the upstreams' guarded
// transport, so a webhook can no more reach Relay's own listeners or a
// metadata address than a host can. A call that fails is decided by the
// rule's fail mode: closed blocks, open lets the text through.
//
// It owns the webhook's wire format (docs/guardrails.md) and nothing of
// the request path: the proxy decides what text to send and what a block
// does. It never logs or returns the text it sends.
package guardhook
