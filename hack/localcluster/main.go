package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schedlab/schedlab/hack/demo/lab"
	"github.com/schedlab/schedlab/hack/localcluster/cluster"
)

// runLab is `up --install-schedlab`: the lab of make demo, kept up until ctx ends.
func runLab(ctx context.Context, o cluster.Options, logger *log.Logger, quiet bool) int {
	root, err := cluster.RepoRoot()
	if err != nil {
		logger.Print(err)
		return 1
	}
	manifests, err := lab.KustomizeManifests(ctx, root)
	if err != nil {
		logger.Print(err)
		return 1
	}
	logf := func(string, ...any) {}
	if !quiet {
		logf = logger.Printf
	}
	l, err := lab.Start(ctx, lab.Options{Dir: o.Dir, RepoRoot: root, Manifests: manifests, Logf: logf})
	if err != nil {
		logger.Print(err)
		return 1
	}
	fmt.Println(l.Cluster.Kubeconfig)
	if !quiet {
		logger.Printf("schedlab is installed and its manager running (log %s): export KUBECONFIG=%s; SIGTERM or Ctrl-C stops it and restores this machine", l.ManagerLog, l.Cluster.Kubeconfig)
	}
	code := 0
	select {
	case <-ctx.Done():
	case <-l.Cluster.Done():
		logger.Printf("a control plane component stopped: %v", l.Cluster.Err())
		code = 1
	}
	// Profiles and experiments go first, so that their agents restore the machine.
	cleanup, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := l.DeleteAll(cleanup, 2*time.Minute); err != nil {
		logger.Print(err)
		code = 1
	}
	if err := l.Stop(); err != nil {
		logger.Print(err)
		code = 1
	}
	if err := l.RestoreHost(); err != nil {
		logger.Printf("restoring what the agents left: %v", err)
		code = 1
	}
	logger.Printf("stopped; this machine is as it was")
	return code
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "up" {
		fmt.Fprintf(os.Stderr, "usage: %s up --dir DIR [flags]\n", os.Args[0])
		os.Exit(2)
	}
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	var o cluster.Options
	fs.StringVar(&o.Dir, "dir", "", "directory for certificates, etcd data, logs, kubeconfig and pod output (required)")
	fs.StringVar(&o.K8sBinDir, "k8s-bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler (default <repo>/bin/k8s)")
	fs.StringVar(&o.BinaryDir, "bin-dir", "", "directory that resolves a pod's relative command[0] (default <repo>/bin)")
	fs.StringVar(&o.NodeName, "node-name", "", "name of this machine's Node (default: host name)")
	fs.BoolVar(&o.DisableKubelet, "no-kubelet", false, "run the control plane only")
	quiet := fs.Bool("quiet", false, "print only the kubeconfig path")
	install := fs.Bool("install-schedlab", false, "install schedlab's CRDs and RBAC and run bin/schedlab manager (bin/schedlab must be built)")
	_ = fs.Parse(os.Args[2:])
	if o.Dir == "" {
		fmt.Fprintln(os.Stderr, "localcluster up: --dir is required")
		os.Exit(2)
	}
	logger := log.New(os.Stderr, "localcluster: ", log.Ltime)
	if !*quiet {
		o.Logf = logger.Printf
	}

	// Under `go run`, a SIGTERM to the go command kills it but not this process: ask the kernel
	// for a SIGTERM when the parent dies, so that the cluster is stopped either way.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if *install {
		os.Exit(runLab(ctx, o, logger, *quiet))
	}
	c, err := cluster.Start(ctx, o)
	if err != nil {
		logger.Fatal(err)
	}
	fmt.Println(c.Kubeconfig)
	if !*quiet {
		logger.Printf("cluster is up: export KUBECONFIG=%s (bin/k8s/kubectl get nodes); Ctrl-C stops it", c.Kubeconfig)
	}
	select {
	case <-ctx.Done():
		c.Stop()
	case <-c.Done():
		err := c.Err()
		c.Stop()
		logger.Fatalf("a control plane component stopped: %v", err)
	}
}
