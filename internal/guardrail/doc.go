// Package guardrail finds what a policy's guardrails look for in the text
// of a request or an answer — e-mail addresses, phone numbers, payment
// cards (Luhn-checked), IBANs (mod-97), national ids with a checksum,
// secrets (provider API keys, private keys, JWTs), deny-listed words and
// regular expressions — and does what the guardrail says: redact with a
// typed placeholder (and restore the originals where an answer echoes a
// placeholder), block, or log.
//
// Streamed answers are checked as they flow (Stream): only a bounded
// window of text is held back, enough for the longest match a detector
// can make, so no unchecked byte is released while a blocking guardrail
// is on.
//
// It is pure text processing: no I/O, no Relay package beyond the
// standard library, and never a matched value in what it reports beyond
// the Match offsets its caller already holds.
package guardrail
