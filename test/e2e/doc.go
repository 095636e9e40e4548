// Package e2e holds schedlab's whole-system tests: the Helm chart and the kustomize
// configuration rendered and applied to a real API server, and the operator's whole flow on this
// machine — a local cluster (hack/localcluster: real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, and a fake kubelet that runs Pods as local
// processes), the manager as a process, an experiment whose agent Pod runs real workloads in real
// cgroups — ending with the machine as it was.
//
// They need bin/schedlab (make build) and bin/k8s (make k8s-bins), which `make test` builds
// first; helm is built from hack/helm on first use. The Measure flow needs root; without it that
// test is skipped with the reason, and everything else runs.
package e2e
