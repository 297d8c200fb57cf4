// Package configfile is Relay's config as code: YAML documents (`kind` +
// `spec`) that describe the catalog, tenancy and access control with natural
// keys (slugs, names, emails) instead of UUIDs; a plan that compares them with
// what a control plane holds; the apply that carries the plan out; and the
// export that writes a control plane's state back as documents.
//
// It talks to Relay only through the control API's generated client
// (openapi/client), as any other program would: it never imports the store
// or reaches Postgres, so `relay apply` works against a remote control plane
// with nothing but its URL and the admin token. The contract it validates
// request bodies against before writing is the API's own (controlgen's
// embedded spec). Secrets are out of its scope: host keys travel as env:
// references, relay keys and passwords are never config.
package configfile
