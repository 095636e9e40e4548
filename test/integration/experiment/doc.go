// Package experiment runs the SchedExperiment controller and the real
// agent loop against a real kube-apiserver and etcd (bin/k8s, `make
// k8s-bins`). The tests fail, not skip, when the control plane is missing;
// under -short they are skipped with the other tests that need one.
//
// Start reading at harness_test.go (the shared control plane, manager and
// scripted agents), then lifecycle_test.go.
package experiment
