# Relay — the two commands a new user needs are `make run` and `make test`.
GO ?= go
BIN := bin/relay
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: run test test-cleanup build generate check-generated bench lint fmt clean

## run: start Relay on the embedded default (embedded Postgres, in-process limiter) and print what to do next
run: build
	./$(BIN) serve

## build: compile bin/relay. The first build on a fresh machine compiles every dependency (several
## minutes; about 15 on 2 slow cores): it says so and shows each package as it compiles. Later builds
## take seconds.
build:
	@echo "Building $(BIN) with $$($(GO) env GOVERSION). A first build compiles every dependency and takes minutes; each package is shown as it compiles."
	@{ $(GO) build -v -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/relay 2>&1; echo "relay-build-exit $$?"; } | awk ' \
		/^relay-build-exit / { code = $$2; next } \
		/^[A-Za-z0-9._~\/-]+$$/ { n++; printf "\r  compiled %d packages: %s\033[K", n, $$0; next } \
		{ if (n) printf "\n"; n = 0; print } \
		END { if (n) printf "\r  compiled %d packages.\033[K\n", n; if (code == 0) print "Built $(BIN)."; exit code }'

## test: the whole suite (and the deploy manifests' checks); with RELAY_TEST_DATABASE_URL unset it starts
## a Postgres of this run's own (two runs at once never share or stop each other's, internal/pgtest);
## it ends with the tests that skipped and why, and the counts (cmd/relay-testsum)
test:
	$(GO) vet ./...
	@dir="$${TMPDIR:-/tmp}/relay-pgtest-$$(id -u)-make-$$$$"; RELAY_TEST_PG_DIR="$$dir" $(GO) run ./cmd/relay-testsum -count=1 -timeout 25m ./...; rc=$$?; \
		$(MAKE) -s test-cleanup PGTEST_DIR="$$dir"; exit $$rc
	cd deploy/validate && $(GO) vet ./... && $(GO) test -count=1 ./...

## test-cleanup: stop the embedded test Postgres in PGTEST_DIR (default: the one plain `go test` runs share); a `make test` run's own is removed too
test-cleanup:
	@dir="$(or $(PGTEST_DIR),$${TMPDIR:-/tmp}/relay-pgtest-$$(id -u))"; \
		pid=$$(head -1 "$$dir/postgres/postmaster.pid" 2>/dev/null) && kill -INT $$pid 2>/dev/null; \
		for i in $$(seq 50); do [ -n "$$pid" ] && kill -0 $$pid 2>/dev/null || break; sleep 0.2; done; \
		case "$$dir" in *-make-*) rm -rf "$$dir";; esac; true

## generate: regenerate sqlc, oapi-codegen and templ output
generate:
	$(GO) tool sqlc generate
	$(GO) generate ./...

## check-generated: regenerate and fail if anything differs from what is committed
check-generated: generate
	git add -N .
	git diff --exit-code

## lint: gofmt, then staticcheck, pinned in go.mod as a tool, on the module and on deploy/validate (generated files are skipped by their header)
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$unformatted" ]; then echo "gofmt wants to change:"; echo "$$unformatted"; exit 1; fi
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
