// Package wire knows the wire shapes just well enough to route and meter a
// request without decoding it: the inbound parse of a request's path and
// headers (ParseCall: its shape, its dialect, what a Gemini path names in
// place of the body), a top-level JSON scanner for request bodies,
// byte splicing of the model and stream options, an SSE splitter that keeps
// every byte verbatim, usage read from bodies and streams as they go by, and
// Relay's user-facing errors and model lists rendered in the caller's shape.
//
// What the scanner reads is what Relay decides on, so it must be what the
// upstream acts on: member names are compared unescaped, and a member Relay
// reads that appears twice (however spelled, or differing only in case) is
// refused, as is a stream flag that is not a boolean. Duplicates of members
// Relay does not read pass through untouched, for the upstream to judge.
// FuzzScanDifferential holds the scanner to encoding/json.
//
// It owns no state and does no I/O beyond the readers it is handed. It must
// not import the store, the loader or anything that reaches Postgres, and it
// never translates between shapes: that is the translator's job.
package wire
