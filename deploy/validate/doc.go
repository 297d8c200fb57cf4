// Package validate renders deploy/kubernetes with kustomize and checks every
// object against the Kubernetes API types (unknown or mistyped fields fail),
// plus the invariants Relay's deployment relies on; it also checks
// deploy/compose.yaml. It is its own module so the main module does not carry
// kustomize and the Kubernetes API types; `make test` runs it.
package validate
