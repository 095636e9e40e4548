// Package tenancy tests, against a real kube-apiserver and etcd (bin/k8s),
// what schedlab ships to keep tenants apart: the admission policy that lets
// an agent write only its own node's NodeRun, with a real pod-bound
// ServiceAccount token.
//
// Start reading at agent_policy_test.go.
package tenancy
