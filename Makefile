# Relay — the two commands a new user needs are `make run` and `make test`.
GO ?= go
BIN := bin/relay
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: run test test-cleanup build generate check-generated bench lint fmt clean

## run: start Relay on the embedded default (embedded Postgres, in-process limiter) and print what to do next
run: build
	./$(BIN) serve

## build: compile bin/relay
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/relay

## test: the whole suite (and the deploy manifests' checks); starts a private Postgres when RELAY_TEST_DATABASE_URL is unset
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 25m ./...; rc=$$?; $(MAKE) -s test-cleanup; exit $$rc
	cd deploy/validate && $(GO) vet ./... && $(GO) test -count=1 ./...

## test-cleanup: stop the embedded Postgres the tests share when RELAY_TEST_DATABASE_URL is unset (internal/pgtest)
test-cleanup:
	@pid=$$(head -1 "$${TMPDIR:-/tmp}/relay-pgtest-$$(id -u)/postgres/postmaster.pid" 2>/dev/null) && kill -INT $$pid 2>/dev/null || true

## generate: regenerate sqlc, oapi-codegen and templ output
generate:
	$(GO) tool sqlc generate
	$(GO) generate ./...

## check-generated: regenerate and fail if anything differs from what is committed
check-generated: generate
	git add -N .
	git diff --exit-code

## lint: staticcheck, pinned in go.mod as a tool, on the module and on deploy/validate (generated files are skipped by their header)
lint:
	$(GO) tool staticcheck ./...
	cd deploy/validate && "$$($(GO) -C ../.. tool -n staticcheck)" ./...

## bench: the load harness (Relay vs direct against the mock upstream) and the hot-path benchmarks
bench: build
	$(GO) run ./cmd/relay-bench -relay-bin $(BIN)
	$(GO) test -run '^$$' -bench . -benchmem ./internal/snapshot/ ./internal/proxy/ ./internal/routing/

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

clean:
	rm -rf bin
