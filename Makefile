# schedlab Makefile. Tools are pinned in go.mod and run with `go tool`.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

GO ?= go
BIN := bin
IMG ?= schedlab:dev
# The commit `schedlab --version` names when the build has no VCS stamp.
COMMIT ?= $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; })
KUBEBUILDER_ASSETS ?= $(CURDIR)/bin/k8s
export KUBEBUILDER_ASSETS

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: ## Generate the CRDs and RBAC from the API markers, and copy the CRDs into the chart.
	$(GO) tool controller-gen crd:allowDangerousTypes=true paths="./api/..." output:crd:artifacts:config=config/crd/bases
	$(GO) tool controller-gen rbac:roleName=schedlab-manager paths="./controllers" output:rbac:artifacts:config=config/rbac
	$(GO) tool controller-gen rbac:roleName=schedlab-agent paths="./agent/..." output:rbac:stdout > config/rbac/agent_role.yaml
	@if [ -d charts/schedlab ]; then mkdir -p charts/schedlab/crds && cp config/crd/bases/*.yaml charts/schedlab/crds/; fi

.PHONY: generate
generate: ## Generate deepcopy code.
	$(GO) tool controller-gen object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet.
	$(GO) vet ./...

.PHONY: lint
lint: vet ## gofmt check and go vet (staticcheck-class checks come from vet here).
	@out=$$(gofmt -s -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt'ed:"; echo "$$out"; exit 1; fi

.PHONY: tidy-check
tidy-check: ## Fail if go.mod or go.sum is not what `go mod tidy` makes of them (prints the diff).
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit"; exit 1; }

.PHONY: verify
verify: manifests generate tidy-check ## Fail if generated files are stale or go.mod is not tidy.
	@git diff --exit-code -- api config charts || { echo "generated files are stale: run 'make manifests generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts)" || { git status --porcelain -- api config charts; echo "generated files are untracked or stale"; exit 1; }

##@ Build

.PHONY: build
build: ## Build the schedlab binary into bin/.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w -X main.commit=$(COMMIT)" -o $(BIN)/schedlab ./cmd/schedlab

##@ Test

.PHONY: test
test: k8s-bins build ## Unit, integration and end-to-end tests (builds the local control plane first, cached).
	@# One package at a time: the agent and end-to-end tests change real node
	@# knobs and measure CPU shares, so they must not overlap each other.
	$(GO) test -p 1 -count=1 -timeout 60m ./...

.PHONY: test-unit
test-unit: ## Unit tests only (no control plane, no root).
	$(GO) test -count=1 -short ./...

.PHONY: reference
reference: ## Compare the workload workers with reference tools here (root; rt-tests, stress-ng, linux-perf, a C compiler) and print the table.
	@# Longer windows and more rounds than `make test` runs (ROUNDS=3 WINDOW=5s by default).
	@out=$$(mktemp); rc=0; \
	$(GO) test -count=1 -timeout 30m -v ./test/reference/ -args -rounds=$(or $(ROUNDS),3) -window=$(or $(WINDOW),5s) > $$out 2>&1 || rc=$$?; \
	grep -v '^REF |' $$out; echo; \
	echo '| pattern | case | runner | round | what | value | noise (CPUs) / note |'; echo '|---|---|---|---|---|---|---|'; \
	grep '^REF |' $$out | sed 's/^REF //'; rm -f $$out; exit $$rc

# The measured campaign behind internal/simengine/VALIDATION.md's current table (the sixteenth
# session's, every window with its timer path); VALIDATION_RUNS=.../runs/2026-12-07-1624 replays the
# fourteenth session's, .../2026-12-07-2014 the fifteenth session's check.
VALIDATION_RUNS ?= internal/simengine/testdata/validation/runs/2026-12-07-2150
VALIDATION_ORDER := probe-hogs,weights-100-200-400,mixed,nice,nested-pods,custom-slice,wakeup-heavy-vs-hogs,desktop-interactivity,make-vs-probe,cgroup-weights

.PHONY: validation
validation: build ## Replay the stored validation campaign with bin/schedlab (32 seeds a run; CPU-heavy, minutes) and print VALIDATION.md's tables.
	$(GO) run ./hack/validation -schedlab $(BIN)/schedlab -replicas 32 -order $(VALIDATION_ORDER) -medians -switches -runs -summary -cyclictest $(VALIDATION_RUNS)

.PHONY: bench
bench: ## Benchmarks.
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

-include hack/k8s.mk
-include hack/e2e.mk

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
