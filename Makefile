# sessionbox: `make run` serves the whole API locally; `make test` runs every test.
GO       ?= go
export PATH := $(PATH):$(shell $(GO) env GOPATH)/bin
# jsii (the CDK's bridge to Node) warns loudly on Node 20; the synth works.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

FUNCTIONS := start stop status execute files install fetch mcp runs reaper authorizer
ADDR     ?= 127.0.0.1:8080
DATA_DIR ?= .data

.PHONY: all setup bins run runtime test test-go test-conformance test-contract test-sdk test-sdk-python test-infra test-cloud build bench lint proto synth preflight deploy diff clean help smoke

## help: this list (the default goal): each target's `## name: what it does` comment
.DEFAULT_GOAL := help
help:
	@awk '/^## / { sub(/^## /, ""); if (!block) { n = index($$0, ": "); name = substr($$0, 1, n - 1); $$0 = substr($$0, n + 2) } \
	  else name = ""; printf "  %-22s %s\n", name, $$0; block = 1; next } { block = 0 }' $(MAKEFILE_LIST)

## all: build (every Lambda bootstrap and bin/)
all: build

## setup: install what `make run` and `make test` need and is missing (apt, npm,
## Go modules) and build the heavy test tools pinned in tools/go.mod into bin/tools/
setup:
	@scripts/setup.sh

## bins: bin/sessionbox and, on Linux, bin/sessionbox-agent (the sandboxes' init), linked
## with one build stamp, a hash of every non-test file under cmd/ and pkg/ and of
## go.mod and go.sum (pkg/buildstamp): sessionbox uses the agent beside it only
## when their stamps match. The agent is built without -trimpath, which would
## drop the -ldflags its build info records and so its stamp. The go build cache
## makes this a relink at most when nothing changed.
STAMP_VAR  := github.com/sessionbox/sessionbox/pkg/buildstamp.Stamp
STAMP_HASH := find cmd pkg -type f ! -name '*_test.go' ! -path '*/testdata/*' -print0 \
  | LC_ALL=C sort -z | xargs -0 sha256sum | cat - go.mod go.sum | sha256sum | cut -c1-32
bins:
	@stamp=$$($(STAMP_HASH)) && set -x && \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X $(STAMP_VAR)=$$stamp" -o bin/sessionbox ./cmd/sessionbox && \
	if [ "$$($(GO) env GOOS)" = linux ]; then \
	  CGO_ENABLED=0 $(GO) build -ldflags "-X $(STAMP_VAR)=$$stamp" -o bin/sessionbox-agent ./cmd/sessionbox-agent; fi

## run: serve the whole API on $(ADDR) with embedded stand-ins for AWS and E2B
run: setup bins
	bin/sessionbox serve --addr $(ADDR) --data-dir $(DATA_DIR)

## runtime: the local E2B-compatible runtime alone (API :3000, sandboxes :3002)
runtime: setup bins
	bin/sessionbox runtime --data-dir $(DATA_DIR)/runtime

## test: lint, then every test: Go (with -race), the SDK conformance suite, the OpenAPI contract, the TypeScript and Python SDKs, the CDK stack
test: setup lint test-go test-conformance test-contract test-sdk test-sdk-python test-infra

test-go:
	$(GO) test -race -count=1 -timeout 30m ./...

test-conformance:
	@if [ -x scripts/conformance/run.sh ]; then scripts/conformance/run.sh; fi

## test-contract: the OpenAPI document linted (@redocly/cli recommended rules and Spectral's
## spectral:oas, no warnings), generated into TypeScript by openapi-typescript and
## @hey-api/openapi-ts, whose output must type-check (sdk/typescript/test/contract), and into
## Go by oapi-codegen, whose client a naive program builds against (scripts/contract/naive);
## every parameter and body field reachable from the Python SDK
test-contract:
	scripts/contract/check.sh

## test-sdk: the TypeScript SDK (sdk/typescript) built and tested with node's test runner,
## against SESSIONBOX_URL/SESSIONBOX_API_KEY when both are set, else against a serve it starts
test-sdk:
	cd sdk/typescript && npm test

## test-sdk-python: the Python SDK (sdk/python) with pytest, on Debian's python3-httpx and
## python3-pytest (the first python3 on PATH that has both, else /usr/bin/python3's), against
## SESSIONBOX_URL/SESSIONBOX_API_KEY when both are set, else against a serve it starts
SDK_PYTHON ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import httpx, pytest' 2>/dev/null && { echo $$p; break; }; done)
test-sdk-python:
	@test -n "$(SDK_PYTHON)" || { echo "test-sdk-python: no python3 with httpx and pytest (scripts/setup.sh installs python3-httpx and python3-pytest)"; exit 1; }
	cd sdk/python && $(SDK_PYTHON) -m pytest -q -p no:cacheprovider tests

test-infra:
	@if [ -f infra/go.mod ]; then cd infra && $(GO) test -count=1 -timeout 20m ./...; fi

## test-cloud: the E2B client's integration tests and the end-to-end tests
## against real E2B (E2B_API_KEY; E2B_DOMAIN or E2B_API_URL/E2B_SANDBOX_URL for
## a self-hosted one). Without a key it says so and succeeds. The same tests
## run against the local runtime in `make test`; e2btest.Env switches them.
CLOUD_TESTS := './pkg/e2b/=^(TestLocal|Example)' \
  './e2e/=^(TestEndToEnd|TestEndToEndLargeRunResult|TestLocalRuntime.*)$$'
test-cloud:
	@if [ -z "$$E2B_API_KEY" ]; then \
	  echo "test-cloud: E2B_API_KEY is not set; SKIPPED the tests against real E2B (nothing was run)"; exit 0; fi; \
	for t in $(CLOUD_TESTS); do \
	  SESSIONBOX_TEST_E2B=cloud $(GO) test -count=1 -timeout 30m -v -run "$${t#*=}" "$${t%%=*}" || exit 1; \
	done

## build: one bootstrap per Lambda function under dist/<name>/, zipped, and bin/ (bins)
build: bins
	@for f in $(FUNCTIONS); do \
	  if [ -d functions/$$f ]; then \
	    CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -ldflags="-s -w" -trimpath -o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	    (cd dist/$$f && rm -f $$f.zip && zip -q -X $$f.zip bootstrap) || exit 1; \
	  fi; \
	done

## bench: Go benchmarks and the benchmark drivers under scripts/bench
bench: setup
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...
	@if [ -x scripts/bench/run.sh ]; then scripts/bench/run.sh; fi

## lint: gofmt, go vet, staticcheck (pinned as a tool in go.mod), and the
## platform boundary: the CLI and the Go client build for darwin and windows
## (pkg/e2blocal is Linux-only; elsewhere its stub says so)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	GOOS=darwin $(GO) build ./cmd/sessionbox ./pkg/client/...
	GOOS=windows $(GO) build ./cmd/sessionbox ./pkg/client/...

## proto: regenerate pkg/envdpb from proto/ (protoc from apt; the generators are
## tools pinned in go.mod, built at those versions onto PATH for protoc)
proto: PROTO_BIN = $(CURDIR)/bin/proto
proto:
	@mkdir -p $(PROTO_BIN)
	$(GO) build -o $(PROTO_BIN)/ google.golang.org/protobuf/cmd/protoc-gen-go connectrpc.com/connect/cmd/protoc-gen-connect-go
	PATH="$(PROTO_BIN):$$PATH" protoc -I proto -I /usr/include \
	  --go_out=. --go_opt=module=github.com/sessionbox/sessionbox \
	  --connect-go_out=. --connect-go_opt=module=github.com/sessionbox/sessionbox \
	  proto/process/process.proto proto/filesystem/filesystem.proto

## synth / deploy / diff: the per-tenant CDK stack (TENANT=acme). The CDK CLI is
## pinned in infra/_cdk/package-lock.json (the leading _ keeps `go test ./...`
## out of its node_modules). Extra context goes in CDK_CONTEXT, e.g.
## CDK_CONTEXT="-c allowedOrigins=https://app.example.com -c e2bSecretName=shared/e2b".
CDK_CLI     := infra/_cdk/node_modules/.bin/cdk
CDK_CONTEXT ?=
CDK_ARGS     = -c tenant=$(TENANT) $(if $(DIST_DIR),-c distDir=$(DIST_DIR)) $(CDK_CONTEXT)
export CDK_DISABLE_CLI_TELEMETRY := true
# aws-cdk-lib calls its own deprecated TableGrantsProps inside TableV2; the
# warnings are not about this code.
synth deploy diff preflight test-infra: export JSII_DEPRECATED := quiet

$(CDK_CLI): infra/_cdk/package.json infra/_cdk/package-lock.json
	cd infra/_cdk && npm ci --no-audit --no-fund
	@touch $@

synth: TENANT ?= example
synth: build $(CDK_CLI)
	$(CDK_CLI) synth $(CDK_ARGS) --output cdk.out --quiet --no-notices
	@echo "CloudFormation for sessionbox-$(TENANT): cdk.out/sessionbox-$(TENANT).template.json"

## preflight: the account's Lambda concurrency against the synthesized stack's
## reservations (infra/README, "Concurrency"); deploy runs it first.
preflight: build $(CDK_CLI)
	@test -n "$(TENANT)" || { echo "TENANT is required: make preflight TENANT=acme"; exit 2; }
	$(CDK_CLI) synth $(CDK_ARGS) --output cdk.out --quiet --no-notices
	cd infra && $(GO) run ./preflight -template ../cdk.out/sessionbox-$(TENANT).template.json -stack sessionbox-$(TENANT)

deploy: build $(CDK_CLI)
	@test -n "$(TENANT)" || { echo "TENANT is required: make deploy TENANT=acme"; exit 2; }
	$(MAKE) --no-print-directory preflight TENANT=$(TENANT)
	$(CDK_CLI) deploy $(CDK_ARGS) --output cdk.out --no-notices $(CDK_DEPLOY_FLAGS) sessionbox-$(TENANT)

diff: build $(CDK_CLI)
	@test -n "$(TENANT)" || { echo "TENANT is required: make diff TENANT=acme"; exit 2; }
	$(CDK_CLI) diff $(CDK_ARGS) --output cdk.out --no-notices sessionbox-$(TENANT)

## smoke: check a deployment as its first users meet it (pkg/smoke): make smoke
## URL=https://<api>.execute-api.<region>.amazonaws.com/prod KEY=sbx_... Extra checks
## go in SMOKE_FLAGS, e.g. SMOKE_FLAGS="--silent-cell 6m --rate-probe 100 --origin https://app.example".
## The same suite runs in `make test` against serve and the emulated gateway (e2e/smoke_test.go).
smoke: bins
	@test -n "$(URL)" -a -n "$(KEY)" || { echo "URL and KEY are required: make smoke URL=... KEY=..."; exit 2; }
	bin/sessionbox smoke --url "$(URL)" --key "$(KEY)" $(SMOKE_FLAGS)

clean:
	rm -rf bin dist cdk.out
