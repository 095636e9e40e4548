// Command demo is `make demo`: a real schedlab experiment on this machine, through a real API
// server, controller and agent, ending in a table of measured next to predicted CPU and a
// report, with the machine left as it was.
//
//	go run ./hack/demo [--sample config/samples/weights-100-200-400.yaml] [--report-dir _out/demo]
//
// It starts a local cluster (hack/localcluster: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler from bin/k8s, and a fake kubelet that runs Pods as local processes), installs
// the CRDs and RBAC (config/crd, config/rbac), runs bin/schedlab manager, applies the sample,
// and waits: the manager locks this machine's Node, its agent DaemonSet becomes a Pod that the
// fake kubelet runs as `schedlab agent`, and the agent runs the workload in real cgroups,
// restores every knob, and writes its NodeRun. Then it prints `kubectl get schedexperiments`
// and `schedlab report`, writes the report, deletes the experiment, stops every process and
// removes its temporary directory.
//
// Without root it cannot change scheduler knobs or create cgroups, so it runs the experiment in
// Simulate mode (predictions only) and says so.
package main
