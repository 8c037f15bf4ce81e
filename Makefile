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
# smoke run and the chart's generators — with GOWORK=off (the matcher:
# its workspace file, MATCHER_WORK) CGO_ENABLED=0 -trimpath, so that Go's build cache shares each package between them. A
# cold CI run compiles Kubernetes, Grype and the rest once per flavour and
# per module whose go.mod selects other versions of their dependencies
# (CROWSNEST_COUNT_COMPILES below counts it).

# The module lists are derived from the tree by hack/modules.sh (every
# tracked go.mod outside testdata/); hack/verify-modules.sh (make verify)
# fails when a go.mod is missed or misclassified. Code modules are linted,
# tidy-checked and tested, each with GOWORK=off so that it is tested exactly
# as it builds alone (the matcher with MATCHER_WORK, as it builds); wrapper modules hold only a tools.go of blank imports
# and are tidy-checked (their dependency set is the cache key of the tool
# binaries), not linted.
comma := ,
CROWSNEST_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/crowsnest
GO_MODULE_CLASSES := $(shell hack/modules.sh make)
$(if $(filter ok:modules,$(GO_MODULE_CLASSES)),,$(error hack/modules.sh failed: $(GO_MODULE_CLASSES)))
modules_of = $(patsubst $(1):%,%,$(filter $(1):%,$(GO_MODULE_CLASSES)))
GO_MODULES := $(call modules_of,code)
GO_WRAPPER_MODULES := $(call modules_of,wrapper)
# module_name MODULE: the module's folder as one word (operator/api -> operator-api).
module_name = $(subst /,-,$(1))

# CROWSNEST_COUNT_COMPILES=1 logs every compile of every go command below
# (hack/compile-log.sh, -toolexec) into dist/compiles.log;
# hack/compile-counts.sh summarises it (make compile-counts).
ifneq ($(CROWSNEST_COUNT_COMPILES),)
export CROWSNEST_COMPILE_LOG ?= $(ROOT)/dist/compiles.log
export GOFLAGS := $(strip $(filter-out -toolexec=%,$(GOFLAGS)) -toolexec=$(ROOT)/hack/compile-log.sh)
$(shell mkdir -p $(dir $(CROWSNEST_COMPILE_LOG)))
endif

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z0-9_%-]+:.*?##/ { printf "  \033[36m%-26s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
	@printf '\n\033[1m%s\033[0m\n' 'Lint one module (lint-NAME, NAME its folder with / as -)'
	@printf '  \033[36m%s\033[0m\n' $(LINT_TARGETS)

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

# Go binaries: bin_NAME is "MODULE PACKAGE OUTPUT"; build-NAME builds
# bin/OUTPUT with GOWORK=off CGO_ENABLED=0 -trimpath (the flavour every
# binary, image and the lint share) and the build stamp.
GO_BINARIES := operator results-api uploader matcher notifier kubectl-plugin
bin_operator := operator ./cmd operator
bin_results-api := results-api ./cmd/results-api results-api
bin_uploader := uploader . uploader
bin_matcher := matcher ./cmd/matcher matcher
bin_notifier := notifier ./cmd/notifier notifier
bin_kubectl-plugin := kubectl-crowsnest . kubectl-crowsnest
ldflags_kubectl-plugin := $(PLUGIN_LDFLAGS)

.PHONY: $(addprefix build-,$(GO_BINARIES))
$(addprefix build-,$(GO_BINARIES)): build-%:
	cd $(word 1,$(bin_$*)) && GOWORK=$(call gowork,$(word 1,$(bin_$*))) CGO_ENABLED=0 go build -trimpath -ldflags="$(or $(ldflags_$*),$(GO_LDFLAGS))" -o $(BIN)/$(word 3,$(bin_$*)) $(word 2,$(bin_$*))

build-operator: ## Build bin/operator.
build-results-api: ## Build bin/results-api (embeds the web UI when web/dist exists).
build-uploader: ## Build bin/uploader.
build-matcher: matcher-patched ## Build bin/matcher (its own module, outside go.work: Grype's dependency tree stays there; Grype with matcher/third_party/patches).
build-notifier: ## Build bin/notifier (its own module, like the matcher).
build-kubectl-plugin: ## Build bin/kubectl-crowsnest (put it on PATH: kubectl crowsnest …).

.PHONY: build-web
build-web: web-deps ## Build the dashboard (web/dist) and copy it into results-api's embedded UI.
	cd web && npm run build
	find results-api/internal/ui/dist -mindepth 1 ! -name .gitignore ! -name README.txt -delete
	cp -R web/dist/. results-api/internal/ui/dist/

.PHONY: web-deps
web-deps: ## Install web/'s npm packages (npm ci) when package-lock.json is newer than node_modules.
	@if [[ ! -f web/node_modules/.package-lock.json || web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then \
	  cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund; fi

# The Grype CLI of the scan image, from the same wrapper module and with the
# same version stamp as hack/tools.sh grype (which caches the host's build).
GRYPE_LDFLAGS := -s -w -X main.version=$(GRYPE_VERSION:v%=%) -X main.gitDescription=$(GRYPE_VERSION) -X main.gitCommit=none -X main.buildDate=1970-01-01T00:00:00Z

.PHONY: build-grype
build-grype: ## Build bin/grype from hack/tools/grype (GOOS/GOARCH for the scan image).
	cd hack/tools/grype && GOWORK=off CGO_ENABLED=0 GOFLAGS="$${GOFLAGS:-} -mod=mod" go build -trimpath -ldflags="$(GRYPE_LDFLAGS)" -o $(BIN)/grype github.com/anchore/grype/cmd/grype

# nats-server for the chart's NATS image (GOOS/GOARCH), built in its own
# module (the proxy's copy at NATS_SERVER_VERSION) with its own go.sum: no
# wrapper module needed. bin/nats-server may be hack/tools.sh's link into
# the cache: replace the link, never write through it.
.PHONY: build-nats
build-nats: ## Build bin/nats-server from github.com/nats-io/nats-server/v2 at NATS_SERVER_VERSION (GOOS/GOARCH for the NATS image).
	@dir=$$(cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	  test -n "$$dir" && rm -f $(BIN)/nats-server && mkdir -p $(BIN) && \
	  cd "$$dir" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags="-s -w" -o $(BIN)/nats-server .

# The matcher builds against Grype with the small patches in
# matcher/third_party/patches (PATCH.md there: memos of parses Grype repeats
# for every package, results unchanged), through the workspace file
# hack/patched-modules.sh writes (make print-matcher-work prints its path): go.mod names upstream's versions, and a
# build with GOWORK=off compiles upstream's code, which gives the same
# output more slowly. gowork DIR is the GOWORK for a module folder (a shell
# word, so that recipes looping over folders can use it): the workspace
# file for the matcher, off for every other module.
# The patched copies live in the tool cache, one per patch, shared by every
# checkout (the race-detector builds key packages by their folder), and the
# workspace file beside them, one per checkout.
PATCHED_MODULES := $(CROWSNEST_CACHE)/patched-modules
MATCHER_WORK := $(PATCHED_MODULES)/work/$(shell printf '%s' '$(ROOT)' | sha256sum | cut -c1-16)/matcher.work
gowork = $$(case $(1) in matcher) echo $(MATCHER_WORK) ;; *) echo off ;; esac)

.PHONY: matcher-patched
matcher-patched: ## Write the matcher's workspace file (MATCHER_WORK): its module against Grype with matcher/third_party/patches applied to a copy (hack/patched-modules.sh).
	hack/patched-modules.sh matcher matcher/third_party/patches $(PATCHED_MODULES) $(MATCHER_WORK) >/dev/null

##@ Test

# make test runs its prerequisites in this order (no -j), to fail fast: the
# quick unit suites (small dependency trees), then the lint, then the slow
# suites. .ci/run runs make verify before it and make e2e after it.
TEST_FAST := test-ci test-api test-operator-api test-uploader test-tools
# TEST_LINT is the lint make test runs after the quick suites. .ci/run sets
# it empty and runs make lint itself, in the background at the lowest CPU
# priority while the suites and the end-to-end tests wait on their systems.
TEST_LINT ?= lint
# TEST_TAIL are make test's last suites. .ci/run sets it empty and runs
# them beside make test, after the end-to-end suites, in their copy of the
# tree: make test's tail otherwise ran on one core's worth of work while
# the other idled.
TEST_TAIL ?= test-images bench-smoke

.PHONY: test
test: $(TEST_FAST) $(TEST_LINT) test-support test-operator test-results-api test-matcher test-notifier test-kubectl-plugin test-chart test-web $(TEST_TAIL) ## Every suite, the lint and every benchmark once: quick unit suites first, then lint, then the slow suites (CI runs make verify, this, then make e2e).

.PHONY: test-fast
test-fast: $(TEST_FAST) ## Only the quick unit suites (make test runs them first).

# Every go test runs through gotestsum: readable output (GOTESTSUM_FORMAT)
# and go test -json in dist/test-json/NAME.json, from which .ci/run reports
# the slowest tests.
TEST_JSON := $(ROOT)/dist/test-json
# Benchmarks apart: go test -json reports a benchmark's start but no pass,
# which report readers count as a failure (a real one still says "fail").
BENCH_JSON := $(ROOT)/dist/bench-json
GOTESTSUM_FORMAT ?= pkgname
# gotest NAME,MODULE,ENV,ARGS[,DIR]: go test ARGS in MODULE (GOWORK=off: each
# module tested as it builds alone), its JSON in DIR/NAME.json (DIR:
# dist/test-json unless given).
gotest = mkdir -p $(or $(5),$(TEST_JSON)) && cd $(2) && GOWORK=$(call gowork,$(2)) $(3) gotestsum --jsonfile $(or $(5),$(TEST_JSON))/$(1).json --format $(GOTESTSUM_FORMAT) $(GOTESTSUM_FLAGS) -- $(4)

# timed: put first on a recipe line to record the line's wall time, exit
# status and CPU time as "TARGET SECONDS STATUS CPU_SECONDS" in
# $CROWSNEST_STEP_LOG when that is set (.ci/run sets it and prints the table
# at the end). The CPU is the user + system time of every process the line
# waited for (the recipe shell's children: go, the compilers, the test
# binaries, the Postgres and browsers they started and reaped), from the
# shell's /proc stat in clock ticks (100 a second here): a suite that used
# 1 core-minute in a 4-minute step spent most of it waiting.
timed = $(if $(CROWSNEST_STEP_LOG),start=$$SECONDS; trap 'rc=$$?; read -ra st </proc/$$$$/stat; cpu=$$(( (st[15] + st[16]) / $(CLK_TCK) )); printf "%s\t%s\t%s\t%s\n" $@ $$((SECONDS - start)) $$rc $$cpu >>"$(CROWSNEST_STEP_LOG)"; echo "step $@: $$((SECONDS - start)) s$(comma) CPU $$cpu s (exit $$rc)"' EXIT;)
CLK_TCK := $(shell getconf CLK_TCK)

# Go suites: test-NAME runs go test $(GO_TEST_FLAGS) ./... in each module of
# suite_NAME (with suite_env_NAME), every module also after one fails, the
# target failing if any did. Every code module with tests is in one
# suite or is E2E_MODULE: hack/verify-modules.sh checks it.
GO_SUITES := api operator-api uploader tools support operator results-api matcher notifier kubectl-plugin chart images
suite_api := api
suite_operator-api := operator/api
suite_uploader := uploader
suite_tools := hack/tools/grype
suite_support := test/support
suite_operator := operator
suite_results-api := results-api
suite_matcher := matcher matcher/third_party/go-sqlite matcher/third_party/go-apk-version
suite_env_matcher := CROWSNEST_GRYPE_BIN=$(BIN)/grype CROWSNEST_GRYPE_PATCHES=$(ROOT)/matcher/third_party/patches
suite_notifier := notifier
suite_kubectl-plugin := kubectl-crowsnest kubectl-crowsnest/e2e
suite_chart := test/chart
suite_images := hack/tools/imagebuild
suite_env_images := CROWSNEST_ROOT=$(ROOT)
E2E_MODULE := test/stack

.PHONY: $(addprefix test-,$(GO_SUITES))
$(addprefix test-,$(GO_SUITES)): test-%: tool-gotestsum
	$(timed) rc=0; $(foreach m,$(suite_$*),($(call gotest,$(call module_name,$(m)),$(m),$(suite_env_$*),$(GO_TEST_FLAGS) ./...)) || rc=1;) exit $$rc

# The suites whose tests start results-api (test/support/resultsapitest)
# run bin/results-api, built once here, instead of each test process
# linking its own.
RESULTS_API_SUITES := test-operator test-uploader test-matcher test-matcher-exactness test-kubectl-plugin bench-smoke
$(RESULTS_API_SUITES): build-results-api
$(RESULTS_API_SUITES): export CROWSNEST_RESULTS_API_BIN := $(BIN)/results-api

test-api: ## Shared contracts: every subject, exit code and path pinned.
test-operator-api: ## The operator's CRD types (Scanner, ClusterScanner).
test-uploader: pg-install ## Uploader tests against a real results-api.
test-tools: ## Tests of the tool modules: the Grype fixture/DB builders.
test-support: kube-assets pg-install ## Smoke-test the real backends: envtest control plane, Postgres, JetStream.
test-operator: test-operator-api kube-assets pg-install ## Operator tests on envtest, embedded NATS and a real results-api (on Postgres); test-operator-api first.
test-results-api: kube-assets pg-install tool-grype ## results-api tests on a real Postgres, embedded NATS and the envtest API server (TokenReview); the OpenVEX export through the Grype CLI (bin/grype).
# The matcher's exactness tests (Grype's output byte for byte with memo,
# cache and footprints on and off; the skip property over generated DB
# pairs; the bounds and statement counts) match on one goroutine: they run
# without the race detector (about 100 s here; 13 min under it), the rest
# of the suite, the concurrent matches and passes among it, with it.
MATCHER_EXACTNESS := ^(TestMatchMemoSameOutput|TestSkipProperty|TestMatchCacheBounded|TestFootprintSameFromMemory|TestMemoStatements)$$
test-matcher: GO_TEST_FLAGS := -count=1 -race -timeout=20m -skip '$(MATCHER_EXACTNESS)'
test-matcher: test-matcher-exactness test-matcher-patches
.PHONY: test-matcher-patches
# MATCHER_PATCHES_SKIP are upstream tests of the patched packages that build
# their image fixtures with a Docker engine, which does not run here.
MATCHER_PATCHES_SKIP := ^(TestProviderLocationExcludes|TestSyftLocationExcludes)$$
test-matcher-patches: tool-gotestsum matcher-patched ## The packages matcher/third_party/patches changes in Grype: upstream's own tests (but those that need a Docker engine) and the patches', against the patched copy, with the race detector.
	$(timed) $(call gotest,matcher-patches,matcher,,-count=1 -race -timeout=10m -skip '$(MATCHER_PATCHES_SKIP)' $$(../hack/patched-modules.sh --packages third_party/patches))
.PHONY: test-matcher-exactness
# Built with the binaries' flags (CGO_ENABLED=0 -trimpath), so that Grype's
# tree compiles for them as for bin/matcher and lint-matcher, not in a third
# flavour of its own (the -race suite is the second).
test-matcher-exactness: pg-install tool-grype tool-gotestsum matcher-patched ## The matcher's single-goroutine exactness tests, without the race detector (make test-matcher runs them first).
	$(timed) $(call gotest,matcher-exactness,matcher,$(suite_env_matcher) CGO_ENABLED=0 GOFLAGS="$${GOFLAGS:-} -trimpath",-count=1 -timeout=20m -run '$(MATCHER_EXACTNESS)' ./internal/rematch/)
test-matcher: pg-install tool-grype matcher-patched ## matcher tests: real Grype library on DBs written with Grype's writer, Grype's own DB client, a real results-api, byte for byte against the Grype CLI (bin/grype).
test-notifier: ## notifier tests: real JetStream with the contract's users, real HTTP receivers, a real Alertmanager built from its module, a SIGKILLed child notifier.
test-kubectl-plugin: kube-assets pg-install ## kubectl-crowsnest: unit tests and krew manifest, then every command against a real kube-apiserver and results-api (Postgres, JetStream).
test-chart: kube-assets tool-helm ## Lint, render and server-side dry-run the Helm chart.
test-images: build-web ## Build the five component images (host platform) with hack/tools/imagebuild and check their content; rebuild one to check the digest is reproducible.

.PHONY: test-ci
test-ci: tool-gotestsum ## Tests of the CI scripts (hack/*_test.sh): the module check fails on a module missed or misclassified, the skew check on a dependency at two versions, the compile counter counts, the timing report.
	$(timed) for t in hack/*_test.sh; do echo "$$t"; "$$t"; done

.PHONY: test-web
test-web: kube-assets pg-install build-web ## Web type check, unit tests, bundle budget, browser tests in Debian's Chromium on a real results-api, and the embedded build against the CSP.
	$(timed) hack/deps.sh chromium && (cd web && npm run check && npm run test:unit && npm run size && npm run test:browser) && \
	  cd results-api && GOWORK=off CROWSNEST_UI_BUILD_REQUIRED=1 go test -count=1 -run '^TestBuildNeedsNoInlineCode$$' ./internal/ui

.PHONY: bench-results-api
bench-results-api: pg-install ## results-api benchmarks: ingest, lookup, queries, WebSocket fan-out (numbers: docs/benchmarks.md).
	cd results-api && go test -run '^$$' -bench 'Ingest/(constructed-1MB|grype-large-cut-1MB)|Lookup|Query' -benchtime 100x -timeout 20m ./bench/
	cd results-api && go test -run '^$$' -bench 'Ingest/(constructed-5MB|grype-large$$)' -benchtime 30x -timeout 20m ./bench/
	cd results-api && go test -run '^$$' -bench 'WebSocket' -benchtime 300x -timeout 10m ./bench/
	cd results-api && go test -run '^$$' -bench 'MemoryUnderLoad' -benchtime 1x -timeout 30m ./bench/
	cd results-api && go test -run '^$$' -bench 'Export|ScopedList' -benchtime 20x -timeout 20m ./bench/

# BENCH_PKGS are the packages with Go benchmarks ("MODULE:./PKG/,./PKG/",
# found by hack/modules.sh); bench-smoke runs each benchmark once so the
# checks inside them run and they cannot rot.
BENCH_PKGS = $(shell hack/modules.sh packages '^func Benchmark')

.PHONY: bench-smoke
# gotestsum's summary lists every benchmark as failed "(unknown)" (no pass
# event, see BENCH_JSON): hide it, and print go test's own lines instead,
# where a failing benchmark shows its messages and --- FAIL (and fails its
# package and the target).
bench-smoke: GOTESTSUM_FORMAT := standard-verbose
bench-smoke: GOTESTSUM_FLAGS := --hide-summary=failed
bench-smoke: kube-assets pg-install tool-gotestsum matcher-patched ## Run every Go benchmark once (-benchtime 1x): correctness checks only, no numbers.
	$(timed) for spec in $(BENCH_PKGS); do m=$${spec%%:*}; pkgs=$${spec#*:}; \
	  ($(call gotest,bench-$${m//\//-},$$m,CGO_ENABLED=0 CROWSNEST_BENCH_SMOKE=1,-trimpath -count=1 -timeout=20m -run '^$$' -bench . -benchtime 1x $${pkgs//$(comma)/ },$(BENCH_JSON))) || exit 1; done

.PHONY: e2e
e2e: GOTESTSUM_FORMAT := standard-verbose
# -p 1: one package at a time, so the node tests (internal/node) and the
# end-to-end stack never run two real nodes at once (kube-proxy's chains and
# the kubelet's host paths are machine-wide).
e2e: stack-deps tool-gotestsum ## End-to-end tests on the local stack (test/stack, tests in test/stack/e2e): real control plane, kwok, a real node (kubelet + containerd) for scan Pods, registry, Grype, NATS, Postgres, results-api, matcher, notifier, operator.
	hack/deps.sh chromium
	$(timed) $(call gotest,e2e,$(E2E_MODULE),,-count=1 -race -p 1 -timeout=40m -v -run '$(E2E_RUN)' ./...)

# E2E_CHART_RUN narrows the suite, e.g. E2E_CHART_RUN="-run TestChartOnTheRealNode/network_policies"
# (the install, then only that step), or E2E_CHART_RUN='-run ^TestTiltCI$$';
# CROWSNEST_E2E_NO_NETPOL=1 runs it without the enforcer.
.PHONY: e2e-chart
e2e-chart: GOTESTSUM_FORMAT := standard-verbose
e2e-chart: stack-deps tool-gotestsum tool-helm tool-tilt build-kubectl-plugin web-deps ## The chart installed for real (test/stack/e2echart): helm install onto the stack's real node, every component a Pod from the images make images builds, a scan stored through the results-api Service, its NetworkPolicies enforced (kube-router's firewall); then tilt ci with the Tiltfile on the same cluster.
	$(MAKE) --no-print-directory images PLATFORMS=linux/$$(go env GOARCH)
	hack/tools.sh kube-router
	hack/deps.sh chromium
	$(timed) $(call gotest,e2e-chart,$(E2E_MODULE),CROWSNEST_E2E_CHART=1,-count=1 -race -p 1 -timeout=40m -v $(E2E_CHART_RUN) ./e2echart/)

.PHONY: bench-rematch-e2e
BENCH_REMATCH_IMAGES ?= 1000
bench-rematch-e2e: stack-deps tool-gotestsum ## A DB update reaching a fleet end to end on the local stack: BENCH_REMATCH_IMAGES (1,000) running images with stored reports, a full and a daily re-match, findings.changed and the notifier's webhook for every affected image (report: dist/bench-rematch-e2e.md).
	mkdir -p dist
	cd test/stack && CROWSNEST_BENCH_REMATCH=$(BENCH_REMATCH_IMAGES) CROWSNEST_BENCH_OUT=$(ROOT)/dist/bench-rematch-e2e.md \
	  GOWORK=off go test -count=1 -timeout=75m -run '^TestBenchRematchFleet$$' -v ./e2e/

.PHONY: bench-e2e
bench-e2e: stack-deps ## Scale benchmark on the local stack (1,000 Pods, 300 digests, 10 namespaces); numbers go to docs/benchmarks.md.
	mkdir -p dist
	cd test/stack && CROWSNEST_BENCH_E2E=1 CROWSNEST_E2E_PARALLEL=10 CROWSNEST_BENCH_OUT=$(ROOT)/dist/bench-e2e.md \
	  go test -count=1 -timeout=45m -run '^TestBench' -v ./e2e/
	@echo "end-to-end numbers: dist/bench-e2e.md (copy them into docs/benchmarks.md, section end-to-end)"

# stack-deps builds everything the local stack runs (cached after the first run):
# the real node's containerd, runc and CNI plugins from apt, CoreDNS (the
# cluster DNS beside the node's kubelet and kube-proxy), and the scan Jobs'
# uploader and grype images for the host platform, which the stack's registry
# serves to the node.
.PHONY: stack-deps
stack-deps: kube-assets pg-install
	hack/deps.sh node
	hack/tools.sh kwok nats-server grype coredns
	@if [[ -f web/package.json ]]; then $(MAKE) --no-print-directory build-web; fi
	$(MAKE) --no-print-directory build-operator build-results-api build-uploader build-matcher build-notifier
	$(MAKE) --no-print-directory image-uploader image-grype PLATFORMS=linux/$$(go env GOARCH)
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

# lint-NAME lints one code module (NAME: its folder, / as -), GOWORK=off
# with the flags of the binaries (CGO_ENABLED=0 -trimpath) so that the type
# information comes from the packages their builds compile. golangci-lint's
# own cache (analysis results, shared by modules with the same packages)
# lives in the tool cache, so a warm CI run keeps it.
# Not one workspace-wide run for go.work's modules: go.work selects newer
# versions of shared dependencies (golang.org/x/net, x/sys, protobuf, logr)
# than the modules' own go.mod files, so that run would check code against
# versions no binary is built with, and compile their trees once more.
LINT_TARGETS := $(foreach m,$(GO_MODULES),lint-$(call module_name,$(m)))
$(foreach m,$(GO_MODULES),$(eval lint_dir_$(call module_name,$(m)) := $(m)))
export GOLANGCI_LINT_CACHE ?= $(CROWSNEST_CACHE)/golangci-lint

.PHONY: lint $(LINT_TARGETS)
lint-matcher: matcher-patched
lint: $(LINT_TARGETS) ## Lint every Go module with the shared config (lint-NAME: one module, make help lists them).

$(LINT_TARGETS): lint-%: tool-golangci-lint
	$(timed) cd $(lint_dir_$*) && echo "lint $(lint_dir_$*)" && GOWORK=$(call gowork,$(lint_dir_$*)) CGO_ENABLED=0 GOFLAGS="$${GOFLAGS:-} -trimpath" golangci-lint run --allow-parallel-runners --config $(ROOT)/.golangci.yml ./...

.PHONY: lint-openapi
lint-openapi: web-deps ## Lint results-api's OpenAPI document with Redocly CLI's recommended rules (any error fails).
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true web/node_modules/.bin/redocly lint --config redocly.yaml --format=summary results-api/api/openapi.yaml

.PHONY: lint-actions
lint-actions: tool-actionlint ## Lint the GitHub Actions workflows (.github/workflows) with the pinned actionlint.
	actionlint

.PHONY: generate
generate: generate-operator generate-results-api generate-web generate-chart generate-metrics ## Regenerate CRDs, deepcopy, OpenAPI types, the chart schema and the metrics reference.

.PHONY: generate-results-api
generate-results-api: tool-oapi-codegen ## Regenerate the Go types of results-api's OpenAPI document: results-api/api/types.gen.go and the kubectl plugin's kubectl-crowsnest/internal/resultsapi/types.gen.go.
	cd results-api/api && go generate ./...
	cd kubectl-crowsnest && GOWORK=off go generate ./internal/resultsapi

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
	cp operator/config/crd/bases/crowsnest.dev_scanners.yaml operator/config/crd/bases/crowsnest.dev_clusterscanners.yaml \
	  operator/config/crd/bases/crowsnest.dev_vulnerabilityexceptions.yaml operator/config/crd/bases/crowsnest.dev_clustervulnerabilityexceptions.yaml \
	  operator/config/crd/bases/crowsnest.dev_vexdocuments.yaml operator/config/crd/bases/crowsnest.dev_clustervexdocuments.yaml \
	  helm/crowsnest/crds/
	cp operator/config/rbac/role.yaml operator/config/rbac/leader_election_role.yaml helm/crowsnest/charts/operator/files/
	cd helm/contract && GOWORK=off CGO_ENABLED=0 go run -trimpath ./cmd/chartschema -o $(ROOT)/helm/crowsnest/values.schema.json
	cd helm/contract && GOWORK=off CGO_ENABLED=0 go run -trimpath ./cmd/natsperm -o $(ROOT)/helm/crowsnest/charts/nats/files/permissions.json

# METRICS_REFERENCE_PKGS are the packages ("MODULE:./PKG/", found by
# hack/modules.sh) whose TestMetricsReference builds a component's
# Prometheus registry as its binary does.
METRICS_REFERENCE_REGEX := ^func TestMetricsReference[(]
METRICS_REFERENCE_PKGS = $(shell hack/modules.sh packages '$(METRICS_REFERENCE_REGEX)')

.PHONY: generate-metrics
generate-metrics: matcher-patched ## Rewrite docs/metrics/<component>.md from each component's real metric registry (the chart tests check alerts and dashboards against them).
	for spec in $(METRICS_REFERENCE_PKGS); do m=$${spec%%:*}; pkgs=$${spec#*:}; (cd $$m && GOWORK=$(call gowork,$$m) UPDATE_METRICS_REFERENCE=1 go test -count=1 -race -run '^TestMetricsReference$$' $${pkgs//$(comma)/ }); done

.PHONY: fixtures
fixtures: ## Regenerate results-api/testdata/grype: real Grype output from offline images and a tiny v6 DB.
	hack/tools.sh grype
	$(BIN)/fixtures --grype $(BIN)/grype --out results-api/testdata/grype --go-src hack/tools/grype/testdata/gobinary

.PHONY: verify
verify: ## Fail when generated files are stale, a go.mod is missed by the module list or untidy, a module breaks the layering rules (docs/architecture.md), version pins disagree, two code modules build a dependency at different versions, or a workflow fails actionlint.
	hack/verify-modules.sh
	hack/verify-imports.sh
	$(MAKE) generate
	$(MAKE) lint-openapi
	$(MAKE) lint-actions
	for m in $(GO_MODULES) $(GO_WRAPPER_MODULES); do (cd $$m && echo "tidy $$m" && GOWORK=off go mod tidy -diff); done
	hack/verify-versions.sh
	hack/module-skew.sh --check $$(hack/modules.sh code | grep -vx hack/tools/coredns)
	git diff --exit-code -- . ':(exclude)web/package-lock.json' || { echo "generated files are stale: run make generate and commit"; exit 1; }

.PHONY: print-matcher-work
print-matcher-work: matcher-patched ## Print the matcher's workspace file (GOWORK=$$(make -s print-matcher-work) go test ./... in matcher/ builds as make does).
	@echo $(MATCHER_WORK)

.PHONY: print-test-tail
print-test-tail: ## Print make test's last suites (TEST_TAIL), which .ci/run runs beside make test.
	@echo $(TEST_TAIL)

.PHONY: list-modules
list-modules: ## Print the Go module lists (derived by hack/modules.sh) and which suite tests each module.
	@echo "code $(GO_MODULES)"
	@echo "wrapper $(GO_WRAPPER_MODULES)"
	@$(foreach s,$(GO_SUITES),echo "suite test-$(s) $(suite_$(s))";)
	@echo "suite e2e $(E2E_MODULE)"

.PHONY: module-skew
module-skew: ## List the dependencies the code modules build at different versions (each skew compiles the trees above it again).
	hack/module-skew.sh

.PHONY: compile-counts
compile-counts: ## Summarise dist/compiles.log, which every go command writes under CROWSNEST_COUNT_COMPILES=1: compiles per flavour, of Kubernetes and Grype.
	hack/compile-counts.sh $(or $(CROWSNEST_COMPILE_LOG),$(ROOT)/dist/compiles.log)

##@ Run

.PHONY: demo
demo: stack-deps ## Run the whole system locally (control plane + kwok, a real node for scan Pods, registry, NATS, Postgres, results-api, matcher, notifier, operator; needs root); Ctrl-C stops it. DEMO_FLAGS=--help lists options.
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
images: $(addprefix image-,$(COMPONENT_IMAGES)) image-grype image-nats ## Build and check every image for PLATFORMS into dist/images (OCI layouts; VERSION, REVISION).

# image-NAME builds dist/images/NAME, tagged VERSION (or image_version_NAME).
IMAGES := $(COMPONENT_IMAGES) grype nats
image_version_grype := $(GRYPE_VERSION)
image_version_nats := $(NATS_SERVER_VERSION)

.PHONY: $(addprefix image-,$(IMAGES))
$(addprefix image-,$(IMAGES)): image-%: imagebuild
	$(call image_build,$*,$(or $(image_version_$*),$(VERSION)))

image-operator: ## Build dist/images/operator.
image-results-api: build-web ## Build dist/images/results-api (the web UI embedded).
image-uploader: ## Build dist/images/uploader (the scan Jobs' main container).
image-matcher: ## Build dist/images/matcher.
image-notifier: ## Build dist/images/notifier.
image-grype: ## Build dist/images/grype: the scan Jobs' Grype image, tagged GRYPE_VERSION.
image-nats: ## Build dist/images/nats: the chart's bundled NATS (nats-server NATS_SERVER_VERSION), tagged with that version.

.PHONY: images-push
images-push: images ## Build, then push every image to REGISTRY (crowsnest-<name>:VERSION, crowsnest-grype:GRYPE_VERSION) with your docker login.
	for c in $(COMPONENT_IMAGES) grype nats; do $(BIN)/imagebuild push -layout $(ROOT)/dist/images/$$c -repo $(REGISTRY)/crowsnest-$$c; done

.PHONY: verify-tiltfile
verify-tiltfile: tool-tilt ## Evaluate the Tiltfile offline with the pinned Tilt (no cluster needed).
	hack/verify-tiltfile.sh

.PHONY: kind-up
kind-up: tool-kind ## Create the kind cluster "crowsnest" with a local registry on localhost:5001.
	deploy/kind/kind-up.sh

.PHONY: kind-down
kind-down: tool-kind ## Delete the kind cluster and its local registry.
	deploy/kind/kind-down.sh

# make dev runs Tilt on the cluster KUBECONFIG names, which the Tiltfile
# accepts only as kind's (kind-crowsnest: make kind-up) or the local stack's
# (crowsnest-stack: make dev-stack prints its dev.env, which exports
# KUBECONFIG, the stack's registry and this machine's chart values; source
# it, then make dev). docs/deploy.md, "Dev loop".
.PHONY: dev
dev: tool-tilt tool-helm ## Run the dev loop (tilt up) on kind (make kind-up first) or on the local stack's cluster (make dev-stack, then source the dev.env it prints).
	tilt up -f Tiltfile

.PHONY: dev-stack
dev-stack: stack-deps ## Run the local stack's cluster for the chart (real node, registry, Postgres, Grype DB mirror; needs root) for make dev or helm install; prints KUBECONFIG and the dev.env to source. Ctrl-C stops it.
	$(MAKE) --no-print-directory images PLATFORMS=linux/$$(go env GOARCH)
	$(BIN)/stack --chart $(DEMO_FLAGS)

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
