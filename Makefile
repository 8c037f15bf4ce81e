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
# -race everywhere: the hub, bus, relay and controller tests are concurrency
# tests, and without the race detector they cannot catch data races.
GO_TEST_FLAGS ?= -count=1 -race -timeout=20m
# Two compilations of the dependency trees, not four: tests (and the metrics
# reference, make generate) build with -race; everything else — binaries,
# images, the lint's type information, binaries tests build, the benchmark
# smoke run and the chart's generators — with GOWORK=off CGO_ENABLED=0
# -trimpath, so that Go's build cache shares each package between them. A
# cold CI run compiles Kubernetes, Grype and the rest once per flavour.
# Every Go module with code: linted, tidy-checked and tested. Modules outside
# go.work (the chart tests and the tool modules) are built with GOWORK=off,
# so all of them are, to test each module exactly as it builds alone.
GO_MODULES := api operator/api operator results-api uploader matcher notifier kubectl-crowsnest kubectl-crowsnest/e2e test/support test/stack test/chart \
  hack/tools/grype hack/tools/imagebuild
# Tool wrapper modules hold only a tools.go of blank imports: tidy-checked
# (their dependency set is the cache key of the binaries), not linted.
GO_WRAPPER_MODULES := hack/tools/kube hack/tools/etcd notifier/internal/amtest/tool

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z0-9_%-]+:.*?##/ { printf "  \033[36m%-26s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

# The build stamp of every binary (api/buildinfo: --version and the
# crowsnest_build_info metric; the plugin's own internal/version). VERSION
# and REVISION given to make win (make images passes each image's);
# otherwise git describes the work tree.
BUILD_VERSION := $(or $(if $(filter command line environment,$(origin VERSION)),$(VERSION)),$(shell git describe --tags --always --dirty 2>/dev/null),dev)
BUILD_REVISION := $(or $(if $(filter command line environment,$(origin REVISION)),$(REVISION)),$(shell git rev-parse HEAD 2>/dev/null))
stamp = -X $(1).Version=$(BUILD_VERSION)$(if $(BUILD_REVISION), -X $(1).Revision=$(BUILD_REVISION))
GO_LDFLAGS := -s -w $(call stamp,github.com/crowsnest-dev/crowsnest/api/buildinfo)
PLUGIN_LDFLAGS := -s -w $(call stamp,github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/version)

.PHONY: build
build: build-operator build-results-api build-uploader build-matcher build-notifier ## Build every component.

.PHONY: build-operator
build-operator: ## Build bin/operator.
	cd operator && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="$(GO_LDFLAGS)" -o $(BIN)/operator ./cmd

.PHONY: build-results-api
build-results-api: ## Build bin/results-api (embeds the web UI when web/dist exists).
	cd results-api && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="$(GO_LDFLAGS)" -o $(BIN)/results-api ./cmd/results-api

.PHONY: build-web
build-web: web-deps ## Build the dashboard (web/dist) and copy it into results-api's embedded UI.
	cd web && npm run build
	find results-api/internal/ui/dist -mindepth 1 ! -name .gitignore ! -name README.txt -delete
	cp -R web/dist/. results-api/internal/ui/dist/

.PHONY: web-deps
web-deps: ## Install web/'s npm packages (npm ci) when package-lock.json is newer than node_modules.
	@if [[ ! -f web/node_modules/.package-lock.json || web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then \
	  cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund; fi

.PHONY: build-matcher
build-matcher: ## Build bin/matcher (its own module, outside go.work: Grype's dependency tree stays there).
	cd matcher && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="$(GO_LDFLAGS)" -o $(BIN)/matcher ./cmd/matcher

.PHONY: build-notifier
build-notifier: ## Build bin/notifier (its own module, like the matcher).
	cd notifier && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="$(GO_LDFLAGS)" -o $(BIN)/notifier ./cmd/notifier

.PHONY: build-kubectl-plugin
build-kubectl-plugin: ## Build bin/kubectl-crowsnest (put it on PATH: kubectl crowsnest …).
	cd kubectl-crowsnest && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="$(PLUGIN_LDFLAGS)" -o $(BIN)/kubectl-crowsnest .

.PHONY: build-uploader
build-uploader: ## Build bin/uploader.
	cd uploader && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="$(GO_LDFLAGS)" -o $(BIN)/uploader .

# The Grype CLI of the scan image, from the same wrapper module and with the
# same version stamp as hack/tools.sh grype (which caches the host's build).
GRYPE_LDFLAGS := -s -w -X main.version=$(GRYPE_VERSION:v%=%) -X main.gitDescription=$(GRYPE_VERSION) -X main.gitCommit=none -X main.buildDate=1970-01-01T00:00:00Z

.PHONY: build-grype
build-grype: ## Build bin/grype from hack/tools/grype (GOOS/GOARCH for the scan image).
	cd hack/tools/grype && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags="$(GRYPE_LDFLAGS)" -o $(BIN)/grype github.com/anchore/grype/cmd/grype

##@ Test

.PHONY: test
test: lint test-api test-support test-operator test-results-api test-uploader test-matcher test-notifier test-kubectl-plugin test-tools test-web test-chart test-images bench-smoke ## Lint, then run every test suite and smoke-run every benchmark (CI runs this, then make e2e).

.PHONY: test-api
test-api: ## Shared contracts: every subject, exit code and path pinned.
	cd api && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-support
test-support: kube-assets pg-install ## Smoke-test the real backends: envtest control plane, Postgres, JetStream.
	cd test/support && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-operator
test-operator: kube-assets pg-install ## Operator tests on envtest, embedded NATS and a real results-api (on Postgres).
	cd operator/api && GOWORK=off go test $(GO_TEST_FLAGS) ./...
	cd operator && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-results-api
test-results-api: kube-assets pg-install ## results-api tests on a real Postgres, embedded NATS and the envtest API server (TokenReview).
	cd results-api && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: bench-results-api
bench-results-api: pg-install ## results-api benchmarks: ingest, lookup, queries, WebSocket fan-out (numbers: docs/benchmarks.md).
	cd results-api && go test -run '^$$' -bench 'Ingest/(constructed-1MB|grype-large-cut-1MB)|Lookup|Query' -benchtime 100x -timeout 20m ./bench/
	cd results-api && go test -run '^$$' -bench 'Ingest/(constructed-5MB|grype-large$$)' -benchtime 30x -timeout 20m ./bench/
	cd results-api && go test -run '^$$' -bench 'WebSocket' -benchtime 300x -timeout 10m ./bench/
	cd results-api && go test -run '^$$' -bench 'MemoryUnderLoad' -benchtime 1x -timeout 30m ./bench/
	cd results-api && go test -run '^$$' -bench 'Export|ScopedList' -benchtime 20x -timeout 20m ./bench/

.PHONY: test-uploader
test-uploader: pg-install ## Uploader tests against a real results-api.
	cd uploader && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-notifier
test-notifier: ## notifier tests: real JetStream with the contract's users, real HTTP receivers, a real Alertmanager built from its module, a SIGKILLed child notifier.
	cd notifier && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-kubectl-plugin
test-kubectl-plugin: kube-assets pg-install ## kubectl-crowsnest: unit tests and krew manifest, then every command against a real kube-apiserver and results-api (Postgres, JetStream).
	cd kubectl-crowsnest && GOWORK=off go test $(GO_TEST_FLAGS) ./...
	cd kubectl-crowsnest/e2e && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-matcher
test-matcher: pg-install ## matcher tests: real Grype library on DBs written with Grype's writer, Grype's own DB client, a real results-api.
	cd matcher && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-tools
test-tools: ## Tests of the tool modules: the Grype fixture/DB builders.
	cd hack/tools/grype && GOWORK=off go test $(GO_TEST_FLAGS) ./...

# BENCH_PKGS are the packages with Go benchmarks; bench-smoke runs each
# benchmark once so the checks inside them run and they cannot rot.
BENCH_PKGS := operator:./internal/controller/scanner/,./internal/scanbudget/,./internal/discovery/,./internal/podcache/ results-api:./bench/ matcher:./internal/rematch/

.PHONY: bench-smoke
bench-smoke: kube-assets pg-install ## Run every Go benchmark once (-benchtime 1x): correctness checks only, no numbers.
	for spec in $(BENCH_PKGS); do m=$${spec%%:*}; pkgs=$${spec#*:}; \
	  (cd $$m && GOWORK=off CGO_ENABLED=0 CROWSNEST_BENCH_SMOKE=1 go test -trimpath -count=1 -timeout=20m -run '^$$' -bench . -benchtime 1x $${pkgs//,/ }); done

.PHONY: test-web
test-web: pg-install web-deps ## Web type check, unit tests, bundle budget, and browser tests in Debian's Chromium on a real results-api.
	hack/deps.sh chromium
	cd web && npm run check && npm run test:unit
	cd web && npm run build && npm run size
	cd web && npm run test:browser

.PHONY: test-chart
test-chart: kube-assets tool-helm ## Lint, render and server-side dry-run the Helm chart.
	cd test/chart && GOWORK=off go test $(GO_TEST_FLAGS) ./...

.PHONY: test-images
test-images: build-web ## Build the five component images (host platform) with hack/tools/imagebuild and check their content; rebuild one to check the digest is reproducible.
	cd hack/tools/imagebuild && GOWORK=off CROWSNEST_ROOT=$(ROOT) go test $(GO_TEST_FLAGS) ./...

.PHONY: e2e
e2e: stack-deps ## End-to-end tests on the local stack (test/stack, tests in test/stack/e2e): real control plane, kwok, registry, Grype, NATS, Postgres, results-api, operator.
	hack/deps.sh chromium
	cd test/stack && GOWORK=off go test -count=1 -race -timeout=40m -v -run '$(E2E_RUN)' ./...

.PHONY: bench-e2e
bench-e2e: stack-deps ## Scale benchmark on the local stack (1,000 Pods, 300 digests, 10 namespaces); numbers go to docs/benchmarks.md.
	mkdir -p dist
	cd test/stack && CROWSNEST_BENCH_E2E=1 CROWSNEST_E2E_PARALLEL=10 CROWSNEST_BENCH_OUT=$(ROOT)/dist/bench-e2e.md \
	  go test -count=1 -timeout=45m -run '^TestBench' -v ./e2e/
	@echo "end-to-end numbers: dist/bench-e2e.md (copy them into docs/benchmarks.md, section end-to-end)"

# stack-deps builds everything the local stack runs (cached after the first run).
.PHONY: stack-deps
stack-deps: kube-assets pg-install
	hack/tools.sh kwok nats-server grype
	@if [[ -f web/package.json ]]; then $(MAKE) --no-print-directory build-web; fi
	$(MAKE) --no-print-directory build-operator build-results-api build-uploader build-matcher build-notifier
	cd test/stack && GOWORK=off CGO_ENABLED=0 go build -trimpath -o $(BIN)/stack ./cmd/stack

.PHONY: bench
bench: bench-operator bench-results-api ## Run the Go benchmarks (numbers: docs/benchmarks.md; bench-e2e runs the scale benchmark).

.PHONY: bench-operator
bench-operator: kube-assets ## Operator benchmarks on envtest (heap, reconcile cost, lookups, latency); numbers go to docs/benchmarks.md.
	cd operator && go test -count=1 -timeout=30m -run '^$$' -bench . -benchtime 20x ./internal/controller/scanner/ ./internal/scanbudget/ ./internal/discovery/

# BENCH_OPERATOR_RSS_FLAGS picks scenarios, e.g. --scenario=10k,100k,per-namespace or --scenario=smoke (--help lists all).
.PHONY: bench-operator-rss
bench-operator-rss: kube-assets pg-install ## The operator binary as a separate process on envtest + results-api: RSS, heap, CPU, Jobs (report: dist/bench-operator-rss.md).
	cd test/stack && go run ./cmd/bench-operator-rss --out=$(ROOT)/dist/bench-operator-rss.md $(BENCH_OPERATOR_RSS_FLAGS)

##@ Code quality

.PHONY: lint
lint: tool-golangci-lint ## Lint every Go module with the shared config.
	for m in $(GO_MODULES); do (cd $$m && echo "lint $$m" && GOWORK=off CGO_ENABLED=0 GOFLAGS="$${GOFLAGS:-} -trimpath" golangci-lint run --allow-parallel-runners --config $(ROOT)/.golangci.yml ./...); done

.PHONY: lint-openapi
lint-openapi: web-deps ## Lint results-api's OpenAPI document with Redocly CLI's recommended rules (any error fails).
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true web/node_modules/.bin/redocly lint --config redocly.yaml --format=summary results-api/api/openapi.yaml

.PHONY: lint-actions
lint-actions: tool-actionlint ## Lint the GitHub Actions workflows (.github/workflows) with the pinned actionlint.
	actionlint

.PHONY: generate
generate: generate-operator generate-results-api generate-web generate-chart generate-metrics ## Regenerate CRDs, deepcopy, OpenAPI types, the chart schema and the metrics reference.

.PHONY: generate-results-api
generate-results-api: tool-oapi-codegen ## Regenerate results-api's Go types (results-api/api/types.gen.go) from its OpenAPI document.
	cd results-api/api && go generate ./...

.PHONY: generate-web
generate-web: web-deps ## Regenerate the web client's types (web/src/lib/api/schema.d.ts) from results-api/api/openapi.yaml.
	cd web && npm run generate

.PHONY: generate-operator
generate-operator: tool-controller-gen ## Regenerate the Scanner deepcopy and CRD, and the operator's RBAC role from markers.
	cd operator/api && $(BIN)/controller-gen object paths=./v1alpha1/... \
	  crd output:crd:artifacts:config=../config/crd/bases
	cd operator && $(BIN)/controller-gen rbac:roleName=manager-role paths=./internal/... output:rbac:artifacts:config=config/rbac

.PHONY: generate-chart
generate-chart: generate-operator ## Copy the operator's generated CRD and RBAC role into the chart; regenerate values.schema.json.
	cp operator/config/crd/bases/crowsnest.dev_scanners.yaml operator/config/crd/bases/crowsnest.dev_clusterscanners.yaml helm/crowsnest/crds/
	cp operator/config/rbac/role.yaml operator/config/rbac/leader_election_role.yaml helm/crowsnest/charts/operator/files/
	cd test/chart && GOWORK=off CGO_ENABLED=0 go run -trimpath ./cmd/chartschema -o $(ROOT)/helm/crowsnest/values.schema.json
	cd test/chart && GOWORK=off CGO_ENABLED=0 go run -trimpath ./cmd/natsperm -o $(ROOT)/helm/crowsnest/charts/nats/files/permissions.json

# METRICS_REFERENCE_PKGS are module:package pairs whose TestMetricsReference
# builds a component's Prometheus registry as its binary does.
METRICS_REFERENCE_PKGS := results-api:./internal/metrics/ operator:./cmd/ matcher:./internal/metrics/ notifier:./internal/metrics/

.PHONY: generate-metrics
generate-metrics: ## Rewrite docs/metrics/<component>.md from each component's real metric registry (the chart tests check alerts and dashboards against them).
	for spec in $(METRICS_REFERENCE_PKGS); do m=$${spec%%:*}; (cd $$m && GOWORK=off UPDATE_METRICS_REFERENCE=1 go test -count=1 -race -run '^TestMetricsReference$$' $${spec#*:}); done

.PHONY: fixtures
fixtures: ## Regenerate results-api/testdata/grype: real Grype output from offline images and a tiny v6 DB.
	hack/tools.sh grype
	$(BIN)/fixtures --grype $(BIN)/grype --out results-api/testdata/grype --go-src hack/tools/grype/testdata/gobinary

.PHONY: verify
verify: ## Fail when generated files are stale, go.mod files are untidy, version pins disagree, or a workflow fails actionlint.
	$(MAKE) generate
	$(MAKE) lint-openapi
	$(MAKE) lint-actions
	for m in $(GO_MODULES) $(GO_WRAPPER_MODULES); do (cd $$m && echo "tidy $$m" && GOWORK=off go mod tidy -diff); done
	hack/verify-versions.sh
	git diff --exit-code -- . ':(exclude)web/package-lock.json' || { echo "generated files are stale: run make generate and commit"; exit 1; }

##@ Run

.PHONY: demo
demo: stack-deps ## Run the whole system locally (control plane + kwok, registry, NATS, Postgres, results-api, operator); Ctrl-C stops it. DEMO_FLAGS=--help lists options.
	$(BIN)/stack $(DEMO_FLAGS)

##@ Packaging and dev loop

# Images are OCI image layouts built without a Docker engine by
# hack/tools/imagebuild (go-containerregistry): each component's static
# binary from its build-<name> target on a small reproducible base (users,
# /tmp, pinned CA certificates; no shell). dist/images/<name> holds one
# image index with every platform of PLATFORMS.
REGISTRY ?= ghcr.io/crowsnest-dev
VERSION ?= $(shell awk '/^appVersion:/ {gsub(/"/, "", $$2); print $$2}' helm/crowsnest/Chart.yaml)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
PLATFORMS ?= linux/amd64,linux/arm64
COMPONENT_IMAGES := operator results-api uploader matcher notifier
# image_build NAME VERSION: build dist/images/NAME, then check its content.
image_build = $(BIN)/imagebuild build -root $(ROOT) -component $(1) -version $(2) -revision $(REVISION) -platforms $(PLATFORMS) -out $(ROOT)/dist/images/$(1) && \
  $(BIN)/imagebuild check -layout $(ROOT)/dist/images/$(1) -component $(1) -revision $(REVISION) -platforms $(PLATFORMS)

.PHONY: imagebuild
imagebuild: ## Build bin/imagebuild, the image builder (hack/tools/imagebuild).
	cd hack/tools/imagebuild && GOWORK=off CGO_ENABLED=0 go build -trimpath -o $(BIN)/imagebuild .

.PHONY: images
images: $(addprefix image-,$(COMPONENT_IMAGES)) image-grype ## Build and check every image for PLATFORMS into dist/images (OCI layouts; VERSION, REVISION).

.PHONY: image-operator
image-operator: imagebuild ## Build dist/images/operator.
	$(call image_build,operator,$(VERSION))

.PHONY: image-results-api
image-results-api: imagebuild build-web ## Build dist/images/results-api (the web UI embedded).
	$(call image_build,results-api,$(VERSION))

.PHONY: image-uploader
image-uploader: imagebuild ## Build dist/images/uploader (the scan Jobs' main container).
	$(call image_build,uploader,$(VERSION))

.PHONY: image-matcher
image-matcher: imagebuild ## Build dist/images/matcher.
	$(call image_build,matcher,$(VERSION))

.PHONY: image-notifier
image-notifier: imagebuild ## Build dist/images/notifier.
	$(call image_build,notifier,$(VERSION))

.PHONY: image-grype
image-grype: imagebuild ## Build dist/images/grype: the scan Jobs' Grype image, tagged GRYPE_VERSION.
	$(call image_build,grype,$(GRYPE_VERSION))

.PHONY: images-push
images-push: images ## Build, then push every image to REGISTRY (crowsnest-<name>:VERSION, crowsnest-grype:GRYPE_VERSION) with your docker login.
	for c in $(COMPONENT_IMAGES) grype; do $(BIN)/imagebuild push -layout $(ROOT)/dist/images/$$c -repo $(REGISTRY)/crowsnest-$$c; done

.PHONY: verify-tiltfile
verify-tiltfile: tool-tilt ## Evaluate the Tiltfile offline with the pinned Tilt (no cluster needed).
	hack/verify-tiltfile.sh

.PHONY: kind-up
kind-up: tool-kind ## Create the kind cluster "crowsnest" with a local registry on localhost:5001.
	deploy/kind/kind-up.sh

.PHONY: kind-down
kind-down: tool-kind ## Delete the kind cluster and its local registry.
	deploy/kind/kind-down.sh

.PHONY: dev
dev: tool-tilt tool-helm ## Run the dev loop on kind (tilt up); run make kind-up first.
	tilt up -f Tiltfile

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
	hack/tools.sh nats-server controller-gen golangci-lint helm kwok actionlint

tool-%:
	hack/tools.sh $*

.PHONY: clean
clean: ## Remove bin/ links and build output (the tool cache stays).
	rm -rf bin dist web/dist
