// Package cluster runs a single-node Kubernetes cluster on this machine for end-to-end tests
// and demos: etcd, kube-apiserver, kube-controller-manager and kube-scheduler from bin/k8s
// (built by `make k8s-bins`), and a fake kubelet (package kubelet) that registers this machine
// as a Node and runs each Pod's containers as local processes.
//
//	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir(), BinaryDir: "bin"})
//	if err != nil { ... }
//	defer c.Stop()
//	// c.Kubeconfig is an admin kubeconfig file; c.Config and c.Client reach the API server.
package cluster
