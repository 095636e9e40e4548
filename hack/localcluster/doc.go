// Command localcluster runs a single-node Kubernetes cluster on this machine: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler from bin/k8s (make k8s-bins), and a
// fake kubelet that runs Pods as local processes. See package cluster.
//
//	go run ./hack/localcluster up --dir _out/localcluster
//
// prints the admin kubeconfig's path and runs until SIGINT or SIGTERM, then stops every
// process it started. With --install-schedlab (what `make lab` runs) it also installs schedlab's
// CRDs and RBAC and runs bin/schedlab manager, as make demo and the end-to-end tests do; on
// SIGTERM it deletes every SchedProfile and SchedExperiment (their agents restore this machine),
// stops everything and restores anything an agent journalled and could not restore.
package main
