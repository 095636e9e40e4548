// Package lab runs schedlab on this machine for `make demo` and the end-to-end tests
// (test/e2e): a local cluster from hack/localcluster (real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, and a fake kubelet that registers this machine's
// Node with schedlab.io/pool=lab and runs Pods as local processes), schedlab's CRDs,
// ServiceAccounts and RBAC, and `bin/schedlab manager` as a process that authenticates as the
// manager's ServiceAccount, so it runs with exactly the generated RBAC.
//
// A real container runtime would give the agent Pods their image's entrypoint and their host
// mounts; fake-runtime-policy.yaml, a MutatingAdmissionPolicy, does that here (see the file).
//
// Start reading at Start.
package lab
