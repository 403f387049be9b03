# dsh — build, test and image targets. `make test` does its own set-up:
# it makes sure a Docker engine answers, builds the images the tests use,
# then runs every test with Docker required.

GO               ?= go
VERSION          ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS          := -s -w -X main.version=$(VERSION)
# The small init's entry point (cmd/dsh-init/entry_amd64.s) exists on amd64;
# elsewhere it starts at the runtime's and drops its privileges in Go.
INIT_LDFLAGS     := -s -w $(if $(filter amd64,$(shell $(GO) env GOARCH)),-E=main.earlyEntry)
STATICCHECK      := honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_TIMEOUT     ?= 30m
# As root (CI, this machine) the privileged sandbox tests must run, not skip.
ifeq ($(shell id -u),0)
REQUIRE_PRIV     := DSH_REQUIRE_ROOT=1 DSH_REQUIRE_USERNS=1 DSH_REQUIRE_CGROUPS=1
endif

.PHONY: all build test test-short lint bench images peers docker man clean e2e-compose

all: build

## build: the static dsh binary at ./bin/dsh, with the native sandbox's
## small init (cmd/dsh-init) embedded, built from the same tree just before
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(INIT_LDFLAGS)' -o sandbox/native/initbin/dsh-init ./cmd/dsh-init
	cd sandbox/native/initbin && sha256sum dsh-init > dsh-init.sum
	CGO_ENABLED=0 $(GO) build -trimpath -tags embedinit -ldflags '$(LDFLAGS)' -o bin/dsh ./cmd/dsh

## docker: make sure a Docker engine answers (installs and starts it when needed)
docker:
	@scripts/ensure-docker.sh

## images: build the images worlds and tests use (never pulled: built locally)
images: docker build
	@DSH_VERSION=$(VERSION) images/build.sh

## peers: the real programs the end-to-end tests talk to (gopls, the npm
## language servers, the MCP Inspector and MCP servers), in .cache/peers
peers:
	@scripts/ensure-gopls.sh
	@scripts/npm-peers.sh lsp-npm typescript-language-server@6.0.2 typescript@5.9.3 pyright@1.1.414
	@scripts/npm-peers.sh mcp-npm @modelcontextprotocol/inspector@0.15.0
	@scripts/ensure-npm-peers.sh

## test: go vet and staticcheck (lint), then everything, with Docker
## required (the README's and CI's test command)
test: lint images peers
	CGO_ENABLED=0 DSH_REQUIRE_DOCKER=1 DSH_REQUIRE_TOOLS=1 $(REQUIRE_PRIV) \
		$(GO) test -timeout $(TEST_TIMEOUT) ./...
	@$(MAKE) --no-print-directory e2e-compose
	@scripts/check-leftovers.sh

## e2e-compose: the compose deployments end to end, with docker compose v2
## and docker-compose 1.29: deploy/compose/README.md's commands as written,
## an MCP client over HTTP, the egress sidecar; nothing left after down -v
e2e-compose: images
	@scripts/ensure-compose.sh
	@mkdir -p .cache
	CGO_ENABLED=0 DSH_E2E_REPORT=$(CURDIR)/.cache/e2e-compose.jsonl \
		$(GO) test -tags e2e -count=1 -timeout 15m -run '^TestComposeE2E$$' ./deploy/compose/
	@cat .cache/e2e-compose.jsonl

## test-short: unit tests only, no Docker
test-short:
	$(GO) test -short ./...

## lint: go vet and staticcheck (pinned)
lint:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./deploy/compose/
	$(GO) run $(STATICCHECK) ./...

## bench: every benchmark, each beside its baseline in the same run
bench: images peers
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench . -benchmem ./...

## man: man pages generated from the command tree into man/
man:
	rm -rf man
	DSH_MAN_DIR=$(CURDIR)/man $(GO) test -count=1 -run '^TestGenManPages$$' ./cmd/dsh
	@ls man

## clean: remove build output
clean:
	rm -rf bin man sandbox/native/initbin/dsh-init sandbox/native/initbin/dsh-init.sum
