# The container image, the Helm chart, the end-to-end test and the demo. Included by the
# top-level Makefile (-include hack/e2e.mk).

# A container tool: docker, or podman with the same command line.
CONTAINER_TOOL ?= docker
# Where `make demo` writes its report (REPORT_DIR=... to keep it somewhere else).
DEMO_REPORT_DIR ?= $(CURDIR)/_out/demo
LAB_DIR ?= $(CURDIR)/_out/lab
# The sample `make demo` runs (a SchedExperiment manifest).
DEMO_SAMPLE ?= config/samples/weights-100-200-400.yaml
HELM := $(CURDIR)/bin/helm

##@ Image

.PHONY: docker-build
docker-build: ## Build the image $(IMG) (manager and agent); its build stage runs what `make build` runs.
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image $(IMG).
	$(CONTAINER_TOOL) push $(IMG)

##@ Helm chart

.PHONY: helm
helm: $(HELM) ## Build helm (pinned in hack/helm/go.mod) into bin/helm.

$(HELM): hack/helm/go.mod hack/helm/go.sum hack/helm/build.sh
	bash hack/helm/build.sh $(HELM)

# The tests run helm lint and helm template (test/e2e).
test: helm

# `make manifests` also regenerates the chart's copy of the RBAC rules.
manifests: chart-rbac

# The same controller-gen runs as `make manifests` makes for config/rbac, written into the chart
# (whose templates cannot read files outside it); test/e2e fails when the two differ.
.PHONY: chart-rbac
chart-rbac: ## Generate the chart's RBAC rules (charts/schedlab/files/rbac) from the +kubebuilder:rbac markers.
	@mkdir -p charts/schedlab/files/rbac
	$(GO) tool controller-gen rbac:roleName=schedlab-manager paths="./controllers" output:rbac:artifacts:config=charts/schedlab/files/rbac
	$(GO) tool controller-gen rbac:roleName=schedlab-agent paths="./agent/..." output:rbac:stdout > charts/schedlab/files/rbac/agent_role.yaml

.PHONY: helm-lint
helm-lint: helm ## helm lint --strict and helm template the chart.
	$(HELM) lint --strict charts/schedlab
	$(HELM) template schedlab charts/schedlab --namespace schedlab-system >/dev/null

.PHONY: helm-template
helm-template: helm ## Print the chart rendered with its default values.
	@$(HELM) template schedlab charts/schedlab --namespace schedlab-system --include-crds

##@ End to end

.PHONY: test-e2e
test-e2e: k8s-bins build helm ## The end-to-end tests only: chart and kustomize against a real API server; the whole flow on this machine (root).
	$(GO) test -count=1 -timeout 15m -v ./test/e2e/...

.PHONY: lab
lab: k8s-bins build ## A local cluster with schedlab installed and its manager running until SIGTERM/Ctrl-C (then this machine is restored); the first line printed is the admin kubeconfig's path. Files in $(LAB_DIR).
	$(GO) build -o bin/localcluster ./hack/localcluster
	exec bin/localcluster up --dir $(LAB_DIR) --install-schedlab

.PHONY: demo
demo: k8s-bins build ## Run a real experiment on this machine through a local cluster (Simulate mode without root); report in $(DEMO_REPORT_DIR).
	$(GO) run ./hack/demo --sample $(DEMO_SAMPLE) --report-dir $(DEMO_REPORT_DIR)
