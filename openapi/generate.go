// Package openapi holds the contract of Relay's control API, control.yaml
// (OpenAPI 3.0), and generates three packages from it with oapi-codegen:
// models, the request and response types both sides share; controlgen, the
// strict-server interface that the hand-written handlers implement plus the
// embedded spec for request validation; and client, the typed Go client
// other programs import. The nullable package is
// the hand-written three-state field type both use for PATCH bodies.
//
// inference.yaml describes the inference plane's own shape, /v1/generate;
// no code is generated from it (the translator's hand-written types are
// validated against it by a proxy test).
//
// Edit control.yaml, then run `make generate`; `make check-generated` fails
// when the generated files are stale.
package openapi

//go:generate go tool oapi-codegen -config models.yaml control.yaml
//go:generate go tool oapi-codegen -config controlgen.yaml control.yaml
//go:generate go tool oapi-codegen -config client.yaml control.yaml
