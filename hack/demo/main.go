package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/hack/demo/lab"
	"github.com/schedlab/schedlab/hack/localcluster/cluster"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/nodeagent"
	"github.com/schedlab/schedlab/internal/progress"
)

func main() {
	sample := flag.String("sample", "config/samples/weights-100-200-400.yaml", "the SchedExperiment to run")
	reportDir := flag.String("report-dir", "_out/demo", "where to write report.md, report.json and cpu.png")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "print the local cluster's and fake kubelet's messages")
	flag.Parse()
	if err := run(*sample, *reportDir, *timeout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

func run(samplePath, reportDir string, timeout time.Duration, verbose bool) (err error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	for _, b := range []string{"bin/schedlab", "bin/k8s/etcd", "bin/k8s/kube-apiserver", "bin/k8s/kube-controller-manager", "bin/k8s/kube-scheduler", "bin/k8s/kubectl"} {
		if _, err := os.Stat(filepath.Join(root, b)); err != nil {
			return fmt.Errorf("%s is missing: run `make demo` (it builds bin/schedlab and bin/k8s first)", b)
		}
	}
	if !filepath.IsAbs(reportDir) {
		reportDir = filepath.Join(root, reportDir)
	}
	exp, err := experiment.Load(filepath.Join(root, samplePath))
	if err != nil {
		return err
	}
	measure := os.Geteuid() == 0
	if !measure {
		exp.Spec.Mode = v1alpha1.ModeSimulate
		step("not running as root: running %s in Simulate mode (predictions only).\n"+
			"    Measuring changes scheduler knobs (/proc/sys/kernel, /sys/kernel/debug/sched) and creates cgroups,\n"+
			"    which needs root: run `sudo make demo` to see measured next to predicted.", exp.Name)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tmp, err := os.MkdirTemp("", "schedlab-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); rmErr != nil && err == nil {
			err = rmErr
		}
		if err == nil {
			fmt.Printf("    removed %s\n", tmp)
		}
	}()
	before := readHost(exp.Name)

	step("building the install manifests (kubectl kustomize config/crd config/rbac)")
	manifests, err := lab.KustomizeManifests(ctx, root)
	if err != nil {
		return err
	}

	step("starting a local cluster in %s: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a fake kubelet for this machine; installing schedlab; starting the manager", tmp)
	start := time.Now()
	logf := func(string, ...any) {}
	if verbose {
		logf = func(f string, a ...any) { fmt.Printf("    "+f+"\n", a...) }
	}
	l, err := lab.Start(ctx, lab.Options{Dir: tmp, RepoRoot: root, Manifests: manifests, Logf: logf,
		ManagerArgs: []string{"--deadline-margin=3m", "--restore-timeout=2m"}})
	if err != nil {
		return err
	}
	defer func() {
		step("stopping the manager and the local cluster")
		if stopErr := l.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		if err == nil {
			err = checkRestored(before, exp.Name)
		}
	}()
	fmt.Printf("    up in %s: node %s (%d CPUs, label %s=lab); manager log %s\n",
		time.Since(start).Round(time.Second), l.Cluster.NodeName, l.CPUs, lab.PoolLabel, l.ManagerLog)

	step("applying SchedExperiment %s (%s mode, %d variants × %d repetitions of %s)", exp.Name, modeOf(exp), len(exp.Spec.Variants),
		max(exp.Spec.Repetitions, 1), exp.Spec.Duration.Duration)
	obj := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: exp.Name, Annotations: exp.Annotations, Labels: exp.Labels}, Spec: exp.Spec}
	if err := l.Client.Create(ctx, obj); err != nil {
		return err
	}
	defer func() {
		if delErr := deleteExperiment(l, exp.Name); delErr != nil && err == nil {
			err = delErr
		}
	}()
	if err := waitWithProgress(ctx, l, exp.Name); err != nil {
		return err
	}

	step("kubectl get schedexperiments")
	out, err := l.Kubectl(ctx, nil, "get", "schedexperiments")
	fmt.Print(string(out))
	if err != nil {
		return err
	}
	step("schedlab report %s --output-dir %s", exp.Name, reportDir)
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "schedlab"), "report", exp.Name, "--kubeconfig", l.Cluster.Kubeconfig, "--output-dir", reportDir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("schedlab report: %w", err)
	}
	fmt.Printf("\n    report: %s\n", filepath.Join(reportDir, "report.md"))
	var runs v1alpha1.NodeRunList
	if err := l.Client.List(ctx, &runs); err == nil {
		for _, r := range runs.Items {
			for _, w := range r.Status.Windows {
				if w.Noisy {
					fmt.Printf("    note: other processes used %.2f CPUs during a measurement window (the agent re-ran it %d times)", w.NoiseCPU, w.Attempts)
					if len(w.NoiseSources) > 0 {
						fmt.Printf(", the most:\n          %s", nodeagent.FormatNoiseSources(w.NoiseSources))
					}
					fmt.Printf(";\n          the demo's own control plane shares this machine; the prediction counts the CPU the\n" +
						"          others took, but a busier machine moves the shares more: run the demo on an idle one\n")
					return nil
				}
			}
		}
	}
	return nil
}

func modeOf(exp *v1alpha1.SchedExperiment) v1alpha1.ExperimentMode {
	if exp.Spec.Mode == "" {
		return v1alpha1.ModeMeasure
	}
	return exp.Spec.Mode
}

// waitWithProgress prints the experiment's progress as it changes until it completes or fails.
func waitWithProgress(ctx context.Context, l *lab.Lab, name string) error {
	start := time.Now()
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var exp v1alpha1.SchedExperiment
		if err := l.Client.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
			return err
		}
		line := progress.Line(&exp)
		if line != last {
			fmt.Printf("    [%4ds] %s\n", int(time.Since(start).Seconds()), line)
			last = line
		}
		if done, err := progress.Finished(&exp); done {
			if err != nil {
				return fmt.Errorf("%w (manager log: %s)", err, l.ManagerLog)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %s)", name, ctx.Err(), line)
		case <-tick.C:
		}
	}
}

// deleteExperiment deletes the experiment and waits until its finalizer is gone: the agent has
// stopped, restored the node and reported it, and the node lock is released.
func deleteExperiment(l *lab.Lab, name string) error {
	step("deleting SchedExperiment %s (its finalizer waits for the node's restore and releases the node lock)", name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exp := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := l.Client.Delete(ctx, exp); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		err := l.Client.Get(ctx, client.ObjectKey{Name: name}, exp)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("SchedExperiment %s is still there (finalizers %v): %w", name, exp.Finalizers, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// host is what the demo must leave as it found: the autogroup knob and the experiment's workload
// cgroups under the cpu controller's schedlab/ directory (cgroup v1 or v2), named
// <experiment>-<node>-g<generation>. (Other schedlab runs on this machine are not the demo's.)
type host struct {
	autogroup string
	cgroups   map[string]bool
}

func readHost(experiment string) host {
	h := host{cgroups: map[string]bool{}}
	if b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled"); err == nil {
		h.autogroup = strings.TrimSpace(string(b))
	}
	matches, _ := filepath.Glob("/sys/fs/cgroup/*/schedlab/*")
	more, _ := filepath.Glob("/sys/fs/cgroup/schedlab/*")
	for _, m := range append(matches, more...) {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() && strings.HasPrefix(filepath.Base(m), experiment+"-") {
			h.cgroups[m] = true
		}
	}
	return h
}

// checkRestored says whether the machine is as it was.
func checkRestored(before host, experiment string) error {
	now := readHost(experiment)
	var problems []string
	if now.autogroup != before.autogroup {
		problems = append(problems, fmt.Sprintf("kernel.sched_autogroup_enabled is %s, was %s", now.autogroup, before.autogroup))
	}
	for c := range now.cgroups {
		if !before.cgroups[c] {
			problems = append(problems, "cgroup left: "+c)
		}
	}
	if len(problems) > 0 {
		return errors.New("this machine is not as it was:\n  " + strings.Join(problems, "\n  "))
	}
	fmt.Printf("    this machine is as it was: kernel.sched_autogroup_enabled=%s, no new cgroup, every process stopped\n", before.autogroup)
	return nil
}
