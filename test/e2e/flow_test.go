package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/hack/demo/lab"
	"github.com/schedlab/schedlab/test/util"
)

const (
	operatorNamespace = "schedlab-system"
	// cpuTolerance is how far measured and predicted cpu of a group may be apart (in CPUs), in
	// quiet windows; the CPU other processes took in a window is added to it.
	cpuTolerance = 0.1
	// busyCPU is the CPU other processes may take in a window before the attempt is retried.
	// The local cluster's own control plane runs on the measured node: etcd, kube-apiserver,
	// the controllers, the manager and this test took 0.10-0.17 CPUs of every window on an
	// otherwise idle 2-CPU machine (load average 2), above the agent's 0.1 CPU quiet mark, so
	// those windows are noisy by the agent's rule yet measured; the tolerance counts that CPU.
	busyCPU = 0.25
)

// TestLocalCluster runs schedlab end to end on this machine: a local cluster (real etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler; the fake kubelet registers this
// machine's Node with schedlab.io/pool=lab), the chart's CRDs, ServiceAccounts and RBAC applied
// for real, and `bin/schedlab manager` as a process with the manager ServiceAccount's token (so
// the generated RBAC is what it runs with). Then an experiment in Simulate mode (no agents) and
// one in Measure mode: the manager's DaemonSet becomes a Pod on the Node, the fake kubelet runs
// `schedlab agent` as a local process, the agent runs the workload in real cgroups and writes
// the NodeRun. The machine must end as it was: knobs, cgroups, processes, Leases.
func TestLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test starts a local cluster")
	}
	requireBinaries(t, "bin/schedlab", "bin/k8s/etcd", "bin/k8s/kube-apiserver", "bin/k8s/kube-controller-manager",
		"bin/k8s/kube-scheduler", "bin/k8s/kubectl")
	metricsAddr := freeAddr(t)
	l := startLab(t, "--metrics-bind-address="+metricsAddr)

	finished := []string{}
	t.Run("Simulate", func(t *testing.T) {
		testSimulate(t, l)
		finished = append(finished, v1alpha1.ReasonSimulated)
	})
	t.Run("Measure", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("skipping the Measure flow: it writes scheduler knobs and creates cgroups on this machine, which needs root " +
				"(run the tests as root, e.g. `sudo -E make test`); the Simulate flow and the chart tests ran")
		}
		testMeasure(t, l)
		if !t.Failed() {
			finished = append(finished, v1alpha1.ReasonSucceeded)
		}
	})
	t.Run("Metrics", func(t *testing.T) { testMetrics(t, l, metricsAddr, finished) })
}

func startLab(t *testing.T, managerArgs ...string) *lab.Lab {
	t.Helper()
	start := time.Now()
	// Install what the chart installs, except the manager Deployment (replicas 0: the manager
	// runs as a process, since the fake kubelet cannot run an image).
	manifests := command(t, nil, helm(t), "template", "schedlab", path("charts", "schedlab"), "--namespace", operatorNamespace,
		"--include-crds", "--set", "controller.replicas=0")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{
		Dir:         t.TempDir(),
		RepoRoot:    repoRoot,
		Manifests:   manifests,
		ManagerArgs: append([]string{"--deadline-margin=3m", "--restore-timeout=1m"}, managerArgs...),
		Logf:        t.Logf,
	})
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, l)
		}
	})
	t.Logf("local cluster up, schedlab installed and the manager running in %s: node %s, %d CPUs",
		time.Since(start).Round(time.Second), l.Cluster.NodeName, l.CPUs)
	return l
}

func testSimulate(t *testing.T, l *lab.Lab) {
	ctx := context.Background()
	exp := loadExperiment(t, "e2e-simulate")
	exp.Spec.Mode = v1alpha1.ModeSimulate
	if err := l.Client.Create(ctx, exp); err != nil {
		t.Fatal(err)
	}
	got, err := waitCompleted(t, l, exp.Name, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	logResults(t, got)

	want := util.FairShares(float64(l.CPUs), []float64{100, 200, 400})
	rows := 0
	for _, r := range got.Status.Results {
		if r.Measured != nil {
			t.Errorf("%s/%s: a Simulate experiment has measurements: %+v", r.Variant, r.Group, r.Measured)
		}
		if r.Predicted == nil {
			t.Errorf("%s/%s: no prediction", r.Variant, r.Group)
			continue
		}
		i := slices.Index([]string{"w100", "w200", "w400"}, r.Group)
		if math.Abs(r.Predicted.CPU-want[i]) > cpuTolerance {
			t.Errorf("%s/%s: predicted cpu %.3f, want %.3f ± %.1f (weights 100:200:400 on %d CPUs)", r.Variant, r.Group, r.Predicted.CPU, want[i], cpuTolerance, l.CPUs)
		}
		rows++
	}
	if rows != 6 {
		t.Errorf("got %d result rows with predictions, want 6 (2 variants × 3 groups)", rows)
	}
	// No agents: no DaemonSet, no NodeRun, no lock.
	var dss appsv1.DaemonSetList
	if err := l.Client.List(ctx, &dss, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(dss.Items) > 0 {
		t.Errorf("Simulate mode created DaemonSet %s", dss.Items[0].Name)
	}
	if runs := nodeRuns(t, l, exp.Name); len(runs) > 0 {
		t.Errorf("Simulate mode created NodeRun %s", runs[0].Name)
	}
	deleteAndCheckGone(t, l, exp.Name)
}

func testMeasure(t *testing.T, l *lab.Lab) {
	ctx := context.Background()
	before := readHostState(t)
	t.Logf("before: sched_autogroup_enabled=%s, cpu controller at %s, cgroups under schedlab/: %v", before.autogroup, before.cpuMount, before.cgroups)

	exp := loadExperiment(t, "e2e-measure")
	// The second variant flips autogroup, whatever this machine has.
	exp.Spec.Variants[1].Knobs.Autogroup = v1alpha1.AutogroupEnabled
	if before.autogroup == "1" {
		exp.Spec.Variants[1].Knobs.Autogroup = v1alpha1.AutogroupDisabled
	}
	// Two things on this machine that are not this test's doing make an attempt meaningless:
	// another schedlab run holding the node (the agent refuses the host lock), and other
	// processes using the CPUs during a window (the agent marks the window noisy after re-running
	// it). Either way the experiment is deleted — which is itself checked — and run again, a
	// few times, before the test gives up saying why.
	var got *v1alpha1.SchedExperiment
	var noise float64 // the most CPU other processes took in a window of the attempt used
	for attempt := 1; ; attempt++ {
		start := time.Now()
		if err := l.Client.Create(ctx, exp.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		var err error
		got, err = waitCompleted(t, l, exp.Name, 4*time.Minute)
		var retry string
		switch {
		case err != nil && (strings.Contains(err.Error(), "node is busy") || strings.Contains(err.Error(), "TimedOut")):
			// A busy node fails the agent, whose Pod then restarts with a back-off; the node may
			// time out before the other run lets go.
			retry = err.Error()
		case err != nil:
			t.Fatal(err)
		default:
			t.Logf("experiment completed in %s", time.Since(start).Round(time.Second))
			msg, most := noisyWindows(nodeRuns(t, l, exp.Name))
			if most > busyCPU {
				retry = msg
			} else if msg != "" {
				t.Logf("%s: compared with the tolerance widened by the largest (%.2f CPUs)", msg, most)
				noise = most
			}
		}
		if retry == "" {
			break
		}
		if attempt == 4 {
			if got != nil {
				logResults(t, got)
				// The columns do not depend on how quiet the windows were.
				checkKubectlGet(t, l, exp.Name)
			}
			t.Fatalf("this machine is too busy for a measurement (other processes use its CPUs or hold it) after %d attempts: %s", attempt, retry)
		}
		t.Logf("attempt %d: %s: deleting the experiment and trying again in 20s", attempt, retry)
		deleteAndCheckGone(t, l, exp.Name)
		time.Sleep(20 * time.Second)
	}
	logResults(t, got)
	checkKubectlGet(t, l, exp.Name)

	for _, c := range []string{v1alpha1.ConditionDegraded, v1alpha1.ConditionFailed} {
		if meta.IsStatusConditionTrue(got.Status.Conditions, c) {
			cond := meta.FindStatusCondition(got.Status.Conditions, c)
			t.Errorf("condition %s is True: %s: %s", c, cond.Reason, cond.Message)
		}
	}
	rows := 0
	for _, r := range got.Status.Results {
		if r.Unsupported != "" {
			t.Errorf("%s/%s: unsupported: %s", r.Variant, r.Group, r.Unsupported)
			continue
		}
		if r.Measured == nil || r.Predicted == nil {
			t.Errorf("%s/%s: measured %v, predicted %v: want both", r.Variant, r.Group, r.Measured, r.Predicted)
			continue
		}
		if d := r.Measured.CPU - r.Predicted.CPU; math.Abs(d) > cpuTolerance+noise {
			t.Errorf("%s/%s: measured cpu %.3f, predicted %.3f: differ by %.3f, more than %.2f CPU (%.1f + %.2f taken by other processes)",
				r.Variant, r.Group, r.Measured.CPU, r.Predicted.CPU, d, cpuTolerance+noise, cpuTolerance, noise)
		}
		rows++
	}
	if rows != 6 {
		t.Errorf("got %d result rows with measured and predicted cpu, want 6 (2 variants × 3 groups)", rows)
	}

	// The agent's own record: every knob it set is back to its original value.
	runs := nodeRuns(t, l, exp.Name)
	if len(runs) != 1 {
		t.Fatalf("got %d NodeRuns of %s, want 1", len(runs), exp.Name)
	}
	st := runs[0].Status
	if !st.Restored {
		t.Errorf("NodeRun %s does not report the node restored (phase %s: %s)", runs[0].Name, st.Phase, st.Message)
	}
	// The agent's calibration window, measured on this machine before the
	// plan and carried into the NodeRun: wake-up path figures of a real
	// node (positive, below 5 ms), the latency terms as quantile lists.
	if c := st.Calibration; c == nil {
		t.Errorf("NodeRun %s has no calibration window", runs[0].Name)
	} else {
		k := c.Constants
		for name, v := range map[string]int64{"timerExpiryNs": k.TimerExpiryNs, "idleExitNs": k.IdleExitNs,
			"ctxSwitchNs": k.CtxSwitchNs, "timerLatenessNs": c.TimerLatenessNs} {
			if v <= 0 || v > 5_000_000 {
				t.Errorf("NodeRun %s: calibration %s %d ns: want a wake-up path's duration, 0 to 5 ms", runs[0].Name, name, v)
			}
		}
		for name, q := range map[string][]int64{"timerExpiryQuantilesNs": k.TimerExpiryQuantilesNs,
			"idleExitQuantilesNs": k.IdleExitQuantilesNs, "ctxSwitchQuantilesNs": k.CtxSwitchQuantilesNs} {
			if len(q) != 7 || !slices.IsSorted(q) || q[0] <= 0 {
				t.Errorf("NodeRun %s: calibration %s %v: want 7 positive, nondecreasing quantiles", runs[0].Name, name, q)
			}
		}
		if c.Samples < 1000 {
			t.Errorf("NodeRun %s: calibration from %d samples, want the window's (1000 sleeps and 2000 messages)", runs[0].Name, c.Samples)
		}
		t.Logf("calibration window: %+v", *c)
	}
	var sawAutogroup bool
	for _, k := range st.Knobs {
		if k.Restored != k.Original || !k.OK {
			t.Errorf("NodeRun %s: knob %s: original %q, set %q, restored %q, ok %v", runs[0].Name, k.Name, k.Original, k.Set, k.Restored, k.OK)
		}
		sawAutogroup = sawAutogroup || strings.Contains(k.Name, "autogroup")
	}
	if !sawAutogroup {
		t.Errorf("NodeRun %s records no autogroup knob, though a variant set it: %+v", runs[0].Name, st.Knobs)
	}

	deleteAndCheckGone(t, l, exp.Name)

	// The machine as it was: every check, with a grace period for processes to be reaped.
	var after hostState
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		after = readHostState(t)
		return after.autogroup == before.autogroup && len(after.newCgroups(before, exp.Name)) == 0 && len(after.procs) == 0, nil
	})
	if err != nil {
		if after.autogroup != before.autogroup {
			t.Errorf("kernel.sched_autogroup_enabled is %s after the run, was %s", after.autogroup, before.autogroup)
		}
		if n := after.newCgroups(before, exp.Name); len(n) > 0 {
			t.Errorf("cgroups left under %s/schedlab: %v", before.cpuMount, n)
		}
		for _, p := range after.procs {
			t.Errorf("process left behind: %s", p)
		}
	}
}

// noisyWindows says which windows the agent measured while other processes used the CPUs.
func noisyWindows(runs []v1alpha1.NodeRun) (string, float64) {
	var noisy []string
	var most float64
	for _, r := range runs {
		for _, w := range r.Status.Windows {
			if w.Noisy {
				noisy = append(noisy, fmt.Sprintf("%s/%s rep %d: %.2f CPUs used by other processes", r.Spec.NodeName, w.Variant, w.Repetition, w.NoiseCPU))
				most = max(most, w.NoiseCPU)
			}
		}
	}
	if len(noisy) == 0 {
		return "", 0
	}
	return "noisy windows: " + strings.Join(noisy, "; "), most
}

// loadExperiment reads testdata/fairness.yaml under a new name.
func loadExperiment(t *testing.T, name string) *v1alpha1.SchedExperiment {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fairness.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var exp v1alpha1.SchedExperiment
	if err := yaml.UnmarshalStrict(b, &exp); err != nil {
		t.Fatal(err)
	}
	exp.Name = name
	return &exp
}

// waitCompleted waits for the experiment's Completed condition, logging progress; it returns
// an error at once when the experiment fails.
func waitCompleted(t *testing.T, l *lab.Lab, name string, timeout time.Duration) (*v1alpha1.SchedExperiment, error) {
	t.Helper()
	var exp v1alpha1.SchedExperiment
	lastLog, lastLine := time.Time{}, ""
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := l.Client.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
			return false, nil
		}
		line := progressLine(&exp)
		if line != lastLine || time.Since(lastLog) > 15*time.Second {
			t.Logf("%s: %s", name, line)
			lastLog, lastLine = time.Now(), line
		}
		if c := meta.FindStatusCondition(exp.Status.Conditions, v1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("experiment failed: %s: %s", c.Reason, c.Message)
		}
		return meta.IsStatusConditionTrue(exp.Status.Conditions, v1alpha1.ConditionCompleted) &&
			exp.Status.ObservedGeneration == exp.Generation, nil
	})
	if err != nil {
		return &exp, fmt.Errorf("waiting for %s to complete: %w; last status: %s", name, err, progressLine(&exp))
	}
	return &exp, nil
}

// checkKubectlGet: `kubectl get sx,nr` (the short names) shows STATUS first
// in the default view of both kinds: Succeeded for the experiment, Completed
// and restored for its NodeRun.
func checkKubectlGet(t *testing.T, l *lab.Lab, name string) {
	t.Helper()
	out, err := l.Kubectl(context.Background(), nil, "get", "sx,nr")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl get sx,nr:\n%s", out)
	tables := strings.Split(strings.TrimSpace(string(out)), "\n\n")
	if len(tables) != 2 {
		t.Fatalf("kubectl get sx,nr printed %d tables, want 2 (SchedExperiments, NodeRuns)", len(tables))
	}
	want := []struct {
		header []string
		row    []string
	}{
		{[]string{"NAME", "STATUS", "MODE", "NODES", "BEST", "PRED-ERROR", "AGE"}, []string{"schedexperiment.schedlab.io/" + name, "Succeeded", "Measure", "1/1"}},
		{[]string{"NAME", "STATUS", "EXPERIMENT", "NODE", "DONE", "TOTAL", "RESTORED", "AGE"}, []string{"Completed", name, "true"}},
	}
	for i, tab := range tables {
		lines := strings.Split(tab, "\n")
		if got := strings.Fields(lines[0]); !slices.Equal(got, want[i].header) {
			t.Errorf("table %d header %v, want %v", i, got, want[i].header)
		}
		found := false
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			ok := true
			for _, w := range want[i].row {
				ok = ok && slices.Contains(f, w)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("table %d has no row with %v:\n%s", i, want[i].row, tab)
		}
	}
}

func progressLine(exp *v1alpha1.SchedExperiment) string {
	var conds []string
	for _, c := range exp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			conds = append(conds, c.Type+"("+c.Reason+")")
		}
	}
	sort.Strings(conds)
	var nodes []string
	for _, n := range exp.Status.Nodes {
		nodes = append(nodes, fmt.Sprintf("%+v", n))
	}
	return fmt.Sprintf("nodes %s %s; conditions %s", exp.Status.NodeProgress, strings.Join(nodes, " "), strings.Join(conds, ", "))
}

func logResults(t *testing.T, exp *v1alpha1.SchedExperiment) {
	t.Helper()
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "VARIANT\tGROUP\tMEASURED CPU\tPREDICTED CPU")
	for _, r := range exp.Status.Results {
		m, p := "-", "-"
		if r.Measured != nil {
			m = fmt.Sprintf("%.3f ± %.3f (n=%d)", r.Measured.CPU, stddevCPU(r.Measured), r.Measured.N)
		}
		if r.Predicted != nil {
			p = fmt.Sprintf("%.3f", r.Predicted.CPU)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Variant, r.Group, m, p)
	}
	w.Flush()
	t.Logf("%s results (best variant %q, prediction error %s):\n%s", exp.Name, exp.Status.BestVariant, exp.Status.PredictionError, b.String())
}

func stddevCPU(m *v1alpha1.MeasuredMetrics) float64 {
	if m.Stddev == nil {
		return 0
	}
	return m.Stddev.CPU
}

func nodeRuns(t *testing.T, l *lab.Lab, experiment string) []v1alpha1.NodeRun {
	t.Helper()
	var list v1alpha1.NodeRunList
	if err := l.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.NodeRun
	for _, r := range list.Items {
		if r.Spec.ExperimentName == experiment {
			out = append(out, r)
		}
	}
	return out
}

// deleteAndCheckGone deletes the experiment and waits until it, its DaemonSet and Pods, its
// NodeRuns and every node Lease in the operator's namespace are gone.
func deleteAndCheckGone(t *testing.T, l *lab.Lab, name string) {
	t.Helper()
	ctx := context.Background()
	exp := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := l.Client.Delete(ctx, exp, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		if err := l.Client.Get(ctx, client.ObjectKey{Name: name}, exp); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("SchedExperiment %s (finalizers %v)", name, exp.Finalizers))
		}
		var dss appsv1.DaemonSetList
		var pods corev1.PodList
		var leases coordinationv1.LeaseList
		for _, list := range []client.ObjectList{&dss, &pods, &leases} {
			if err := l.Client.List(ctx, list, client.InNamespace(operatorNamespace)); err != nil {
				return false, err
			}
		}
		for _, o := range dss.Items {
			left = append(left, "DaemonSet "+o.Name)
		}
		for _, o := range pods.Items {
			left = append(left, "Pod "+o.Name)
		}
		for _, o := range leases.Items {
			left = append(left, "Lease "+o.Name)
		}
		for _, r := range nodeRuns(t, l, name) {
			left = append(left, "NodeRun "+r.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("after deleting %s, still there: %s", name, strings.Join(left, ", "))
	}
}

// hostState is what the Measure flow must leave as it found.
type hostState struct {
	autogroup string   // /proc/sys/kernel/sched_autogroup_enabled
	cpuMount  string   // the cpu controller's hierarchy
	cgroups   []string // directories under <cpuMount>/schedlab
	procs     []string // workload workers and agents of bin/schedlab
}

func readHostState(t *testing.T) hostState {
	t.Helper()
	var s hostState
	b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	if err != nil {
		t.Fatal(err)
	}
	s.autogroup = strings.TrimSpace(string(b))
	s.cpuMount = cpuControllerMount(t)
	if s.cpuMount != "" {
		_ = filepath.WalkDir(filepath.Join(s.cpuMount, "schedlab"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != filepath.Join(s.cpuMount, "schedlab") {
				s.cgroups = append(s.cgroups, strings.TrimPrefix(p, s.cpuMount+"/"))
			}
			return nil
		})
	}
	s.procs = schedlabProcesses()
	return s
}

// newCgroups are the cgroups of the experiment's runs (schedlab/<experiment>-<node>-g<generation>)
// that were not there before; other schedlab runs on this machine are not this test's.
func (s hostState) newCgroups(before hostState, experiment string) []string {
	var out []string
	for _, c := range s.cgroups {
		if strings.HasPrefix(c, "schedlab/"+experiment+"-") && !slices.Contains(before.cgroups, c) {
			out = append(out, c)
		}
	}
	return out
}

// cpuControllerMount finds the cgroup v2 root (when it offers cpu) or the v1 cpu hierarchy.
func cpuControllerMount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var v1 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || len(fields) < sep+4 {
			continue
		}
		mountPoint, fsType, superOpts := fields[4], fields[sep+1], fields[sep+3]
		switch fsType {
		case "cgroup2":
			if b, err := os.ReadFile(filepath.Join(mountPoint, "cgroup.controllers")); err == nil && slices.Contains(strings.Fields(string(b)), "cpu") {
				return mountPoint
			}
		case "cgroup":
			if slices.Contains(strings.Split(superOpts, ","), "cpu") && v1 == "" {
				v1 = mountPoint
			}
		}
	}
	return v1
}

// schedlabProcesses lists the processes of this repository's bin/schedlab that run a workload
// worker (argv[1] == "__worker") or an agent.
func schedlabProcesses() []string {
	bin := path("bin", "schedlab")
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", pid, "exe"))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != bin {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) > 1 && (argv[1] == "__worker" || argv[1] == "agent") {
			out = append(out, fmt.Sprintf("pid %s: %s", pid, strings.Join(argv, " ")))
		}
	}
	return out
}

// dumpState logs what a failed run needs to be understood: the manager's and the pods' output
// and the objects.
func dumpState(t *testing.T, l *lab.Lab) {
	if b, err := os.ReadFile(l.ManagerLog); err == nil {
		t.Logf("manager log (tail):\n%s", tail(string(b), 80))
	}
	logs, _ := filepath.Glob(filepath.Join(l.Cluster.Dir, "pods", "*", "*.log"))
	for _, p := range logs {
		if b, err := os.ReadFile(p); err == nil {
			t.Logf("%s (tail):\n%s", strings.TrimPrefix(p, l.Cluster.Dir+"/"), tail(string(b), 60))
		}
	}
	out, err := tryCommand(nil, kubectl(), "--kubeconfig", l.Cluster.Kubeconfig, "get", "schedexperiments,noderuns,nodes", "-o", "wide")
	t.Logf("kubectl get:\n%s%v", out, errOrNil(err))
	out, err = tryCommand(nil, kubectl(), "--kubeconfig", l.Cluster.Kubeconfig, "get", "daemonsets,pods,leases,events", "-n", operatorNamespace, "-o", "wide")
	t.Logf("kubectl get -n %s:\n%s%v", operatorNamespace, out, errOrNil(err))
}

func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
