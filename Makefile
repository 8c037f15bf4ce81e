# Crowsnest — the one entry point for build, test, generate and the local stack.
# `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

include hack/versions.env

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
export PATH := $(BIN):$(PATH)
export KUBEBUILDER_ASSETS ?= $(BIN)/k8s
GO_TEST_FLAGS ?= -count=1 -timeout=20m
GO_MODULES := hack/testsupport operator/api operator results-api uploader

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z0-9_%-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: build-operator build-results-api build-uploader ## Build every component.

.PHONY: build-operator
build-operator: ## Build bin/operator.
	cd operator && CGO_ENABLED=0 go build -trimpath -o $(BIN)/operator ./cmd

.PHONY: build-results-api
build-results-api: ## Build bin/results-api (embeds the web UI when web/dist exists).
	cd results-api && CGO_ENABLED=0 go build -trimpath -o $(BIN)/results-api ./cmd/results-api

.PHONY: build-web
build-web: web-deps ## Build the dashboard (web/dist) and copy it into results-api's embedded UI.
	cd web && npm run build
	find results-api/internal/ui/dist -mindepth 1 ! -name .gitignore ! -name README.txt -delete
	cp -R web/dist/. results-api/internal/ui/dist/

.PHONY: web-deps
web-deps: ## Install web/'s npm packages (npm ci) when package-lock.json is newer than node_modules.
	@if [[ ! -f web/node_modules/.package-lock.json || web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then \
	  cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund; fi

.PHONY: build-uploader
build-uploader: ## Build bin/uploader.
	cd uploader && CGO_ENABLED=0 go build -trimpath -o $(BIN)/uploader .

##@ Test

.PHONY: test
test: test-support test-operator test-results-api test-uploader test-web test-chart ## Run every test suite (what CI runs).

.PHONY: test-support
test-support: kube-assets pg-install ## Smoke-test the real backends: envtest control plane, Postgres, JetStream.
	cd hack/testsupport && go test $(GO_TEST_FLAGS) ./...

.PHONY: test-operator
test-operator: kube-assets ## Operator tests on envtest, embedded NATS and a real results-api.
	cd operator/api && go test $(GO_TEST_FLAGS) ./...
	cd operator && go test $(GO_TEST_FLAGS) ./...

.PHONY: test-results-api
test-results-api: pg-install ## results-api tests on a real Postgres and embedded NATS.
	cd results-api && go test $(GO_TEST_FLAGS) ./...

.PHONY: test-uploader
test-uploader: pg-install ## Uploader tests against a real results-api.
	cd uploader && go test $(GO_TEST_FLAGS) ./...

.PHONY: test-web
test-web: pg-install web-deps ## Web type check, unit tests, bundle budget, and browser tests in Debian's Chromium on a real results-api.
	hack/deps.sh chromium
	cd web && npm run check && npm run test:unit
	cd web && npm run build && npm run size
	cd web && npm run test:browser

.PHONY: test-chart
test-chart: ## Lint, render and server-side dry-run the Helm chart.
	@echo "test-chart: the chart lands with the packaging issue; nothing to test yet"

.PHONY: e2e
e2e: ## End-to-end tests on the local stack.
	@echo "e2e: the local stack lands with the local-stack issue; not yet available"

.PHONY: bench
bench: bench-operator ## Run the Go benchmarks and write the numbers to docs/benchmarks.md.
	@echo "bench: benchmarks land with the results-api and operator issues"

.PHONY: bench-operator
bench-operator: kube-assets ## Operator benchmarks on envtest (heap, reconcile cost, lookups, latency); numbers go to docs/benchmarks.md.
	cd operator && go test -count=1 -timeout=30m -run '^$$' -bench . -benchtime 1x ./internal/controller/

##@ Code quality

.PHONY: lint
lint: tool-golangci-lint ## Lint every Go module with the shared config.
	for m in $(GO_MODULES); do (cd $$m && echo "lint $$m" && golangci-lint run --config $(ROOT)/.golangci.yml ./...); done

.PHONY: generate
generate: generate-operator generate-web ## Regenerate CRDs, deepcopy, OpenAPI types and the chart schema.
	@echo "generate: nothing generated yet"

.PHONY: generate-web
generate-web: web-deps ## Regenerate the web client's types (web/src/lib/api/schema.d.ts) from results-api/api/openapi.yaml.
	cd web && npm run generate

.PHONY: generate-operator
generate-operator: tool-controller-gen ## Regenerate the Scanner deepcopy and CRD, and the operator's RBAC role from markers.
	cd operator/api && $(BIN)/controller-gen object paths=./v1alpha1/... \
	  crd output:crd:artifacts:config=../config/crd/bases
	cd operator && $(BIN)/controller-gen rbac:roleName=manager-role paths=./internal/... output:rbac:artifacts:config=config/rbac

.PHONY: verify
verify: ## Fail when generated files are stale or go.mod files are untidy.
	$(MAKE) generate
	for m in $(GO_MODULES); do (cd $$m && GOWORK=off go mod tidy -diff); done
	git diff --exit-code -- . ':(exclude)web/package-lock.json' || { echo "generated files are stale: run make generate and commit"; exit 1; }

##@ Run

.PHONY: demo
demo: ## Run the whole system locally (control plane, registry, NATS, Postgres, results-api, operator).
	@echo "make demo: not yet available — the local stack lands with the local-stack issue."

##@ Tools and backends

.PHONY: deps
deps: pg-install ## Install the system packages the tests need (Postgres; Chromium with test-web).

.PHONY: pg-install
pg-install: ## Install Postgres server binaries when missing.
	@hack/deps.sh postgres

.PHONY: kube-assets
kube-assets: ## Build/link kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl into bin/k8s.
	hack/tools.sh kube etcd

.PHONY: tools
tools: kube-assets ## Build/link every pinned tool into bin/.
	hack/tools.sh nats-server controller-gen golangci-lint helm kwok

tool-%:
	hack/tools.sh $*

.PHONY: clean
clean: ## Remove bin/ links and build output (the tool cache stays).
	rm -rf bin dist web/dist
