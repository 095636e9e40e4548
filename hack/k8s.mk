# Local Kubernetes control plane: included by the top-level Makefile (include hack/k8s.mk).
# Owned by hack/; the targets here build and run what test/envtest and hack/localcluster need.

# Where the control plane binaries go; test/envtest and hack/localcluster look here.
K8S_BIN_DIR ?= $(CURDIR)/bin/k8s
# Working directory of `make localcluster-up` (certs, etcd data, kubeconfig, logs, pod logs).
LOCALCLUSTER_DIR ?= $(CURDIR)/_out/localcluster

.PHONY: k8s-bins
k8s-bins: ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd into bin/k8s (cached).
	BIN_DIR=$(K8S_BIN_DIR) bash hack/build-k8s.sh

.PHONY: k8s-bins-update
k8s-bins-update: ## Regenerate hack/tools/k8s/go.mod and go.sum (KUBERNETES_VERSION=v1.x.y to change version).
	bash hack/update-k8s-tools.sh $(KUBERNETES_VERSION)

.PHONY: test-envtest
test-envtest: k8s-bins ## Run the envtest helper's own integration test against bin/k8s.
	go test ./test/envtest/...

.PHONY: test-localcluster
test-localcluster: k8s-bins ## Run the local cluster harness test (real control plane + fake kubelet; needs root).
	go test -count=1 -timeout 10m ./hack/localcluster/...

.PHONY: localcluster-up
localcluster-up: k8s-bins ## Run a local cluster (etcd, apiserver, kcm, scheduler, fake kubelet) until Ctrl-C.
	go run ./hack/localcluster up --dir $(LOCALCLUSTER_DIR) --k8s-bin-dir $(K8S_BIN_DIR)
