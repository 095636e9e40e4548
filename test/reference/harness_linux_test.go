package reference

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/cyclictest"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// Flags: `make test` runs the defaults (3 s windows, three rounds, about
// two and a half minutes); `make reference` runs longer windows and more rounds.
var (
	rounds      = flag.Int("rounds", 3, "interleaved rounds per comparison")
	windowLen   = flag.Duration("window", 3*time.Second, "measured window per run")
	warmupLen   = flag.Duration("warmup", time.Second, "warmup before each window")
	periodicRun = flag.Duration("periodic-run", 6*time.Millisecond, "run of the Periodic task (every 10 ms) compared with the reference loop")
)

// quiet is the CPU (in CPUs) that processes outside a comparison may use in
// its window for the tight tolerance to apply; above it the tolerance grows
// by the CPU they took (it may all have come out of one group).
const quiet = 0.1

// row is one line of the reference table that `make reference` prints.
func row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case float64:
			parts[i] = strconv.FormatFloat(v, 'f', 3, 64)
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	fmt.Printf("REF | %s |\n", strings.Join(parts, " | "))
}

// node is this machine prepared for a comparison: its lock, its cgroups and
// a journal of every change, undone by the test's cleanup.
type node struct {
	t    *testing.T
	caps *v1alpha1.NodeCapabilities
	cg   *host.Cgroups
	ch   *host.Changes
	id   string
}

func newNode(t *testing.T) *node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes cgroups, moves processes, sets autogroup")
	}
	if testing.Short() {
		t.Skip("-short: compares the workers with reference tools on the real kernel for minutes")
	}
	fsys := host.NewFS("/")
	// One state directory for every run of this package, as an agent has:
	// a run killed at its timeout (no cleanup runs then) leaves its journal
	// there, and the next run restores what it changed before anything else.
	state := filepath.Join(os.TempDir(), "schedlab-reference-tests")
	id := fmt.Sprintf("ref-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	lock, err := host.AcquireLock(fsys, state, id, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := host.RecoverJournal(fsys, state, logr.Discard()); err != nil {
		lock.Release()
		t.Fatalf("restoring what an earlier, killed run of these tests changed: %v", err)
	} else if len(recs) > 0 {
		t.Logf("restored %d changes an earlier, killed run of these tests left: %v", len(recs), recs)
	}
	caps, err := host.Detect(fsys)
	if err != nil {
		lock.Release()
		t.Fatal(err)
	}
	cg, err := host.NewCgroups(fsys, caps)
	if err != nil {
		lock.Release()
		t.Skip(err)
	}
	n := &node{t: t, caps: caps, cg: cg, ch: host.NewChanges(fsys, host.NewJournal(state, id), logr.Discard()), id: id}
	t.Cleanup(func() {
		if err := n.ch.Restore(); err != nil {
			t.Errorf("restoring this machine: %v", err)
		} else if err := n.ch.Journal.Remove(); err != nil {
			t.Error(err)
		}
		lock.Release()
	})
	return n
}

// layout makes the groups' cgroups (replica 0 of each) and returns, by group,
// the procs file tasks join and the directory whose own CPU is the group's.
type layout struct {
	procs map[string]string
	dirs  map[string]string
	kids  map[string][]string
	order []string
}

func (n *node) layout(groups []v1alpha1.Group) *layout {
	n.t.Helper()
	reps, err := n.cg.Create(n.ch, n.id, groups)
	if err != nil {
		n.t.Fatal(err)
	}
	l := &layout{procs: map[string]string{}, dirs: map[string]string{}, kids: map[string][]string{}}
	for _, r := range reps {
		l.procs[r.Group], l.dirs[r.Group], l.kids[r.Group] = r.Procs(), r.Dir, r.Children
		l.order = append(l.order, r.Group)
	}
	return l
}

// usage is each group's own CPU time (children subtracted) and the
// machine's busy time, at one instant.
func (n *node) usage(l *layout) (map[string]time.Duration, time.Duration, time.Time) {
	n.t.Helper()
	out := map[string]time.Duration{}
	for _, g := range l.order {
		u, _, err := n.cg.Usage(l.dirs[g])
		if err != nil {
			n.t.Fatal(err)
		}
		for _, k := range l.kids[g] {
			ku, _, err := n.cg.Usage(k)
			if err != nil {
				n.t.Fatal(err)
			}
			u -= ku
		}
		out[g] = u
	}
	return out, machineBusy(n.t), time.Now()
}

func machineBusy(t *testing.T) time.Duration {
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat()
	if err != nil {
		t.Fatal(err)
	}
	c := st.CPUTotal
	return time.Duration((c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal) * float64(time.Second))
}

// cpuWindow measures each group's CPUs over one window after the warmup,
// and the CPUs everything else used (noise).
func (n *node) cpuWindow(l *layout) (map[string]float64, float64) {
	time.Sleep(*warmupLen)
	u0, b0, t0 := n.usage(l)
	time.Sleep(*windowLen)
	u1, b1, t1 := n.usage(l)
	secs := t1.Sub(t0).Seconds()
	out := map[string]float64{}
	var ours float64
	for g := range u0 {
		out[g] = (u1[g] - u0[g]).Seconds() / secs
		ours += out[g]
	}
	return out, max(0, (b1-b0).Seconds()/secs-ours)
}

// workerWindow starts a worker Set, lets it warm up, measures one window
// and stops it: the window, each layout group's CPUs (cgroup) over it, and
// the CPUs everything else used (noise).
func (n *node) workerWindow(l *layout, spec workload.Spec) (*workload.Window, map[string]float64, float64) {
	n.t.Helper()
	spec.WorkerBinary = selfBinary(n.t)
	s, err := workload.Start(context.Background(), spec)
	if err != nil {
		n.t.Fatal(err)
	}
	defer s.Stop()
	time.Sleep(*warmupLen)
	u0, b0, t0 := n.usage(l)
	if err := s.Begin(); err != nil {
		n.t.Fatal(err)
	}
	time.Sleep(*windowLen)
	w, err := s.End()
	if err != nil {
		n.t.Fatal(err)
	}
	u1, b1, t1 := n.usage(l)
	secs := t1.Sub(t0).Seconds()
	cpu := map[string]float64{}
	var ours float64
	for _, g := range l.order {
		cpu[g] = (u1[g] - u0[g]).Seconds() / secs
		ours += cpu[g]
	}
	return w, cpu, max(0, (b1-b0).Seconds()/secs-ours)
}

// procs is a set of reference processes, each a process group, killed by
// the test's cleanup.
type procs struct{ cmds []*exec.Cmd }

// start runs argv after moving the shell that execs it into the cgroup
// whose procs file is given ("" leaves it here), as the leader of a new
// session when session is set: everything it forks is placed before it runs.
func (p *procs) start(t *testing.T, procsFile string, session bool, argv ...string) *exec.Cmd {
	return p.startOut(t, nil, procsFile, session, argv...)
}

// startOut is start with the command's standard output going to stdout.
func (p *procs) startOut(t *testing.T, stdout io.Writer, procsFile string, session bool, argv ...string) *exec.Cmd {
	t.Helper()
	script := `exec "$@"`
	if procsFile != "" {
		script = `echo $$ > "$0" && exec "$@"`
	}
	args := append([]string{"-c", script, procsFile}, argv...)
	if procsFile == "" {
		args = append([]string{"-c", script, "sh"}, argv...)
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: session, Setpgid: !session, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmds = append(p.cmds, cmd)
	return cmd
}

func (p *procs) stop() {
	for _, c := range p.cmds {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	for _, c := range p.cmds {
		_ = c.Wait()
	}
	p.cmds = nil
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("reference tool %s is not installed (Debian: rt-tests for cyclictest, stress-ng, linux-perf for perf); .ci/run installs it", tool)
		}
	}
}

func selfBinary(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// hogLayout is one weighted layout of hog groups: tasks per group.
type hogLayout struct {
	name   string
	groups []v1alpha1.Group
}

func i32(v int32) *int32 { return &v }

func hogGroup(name string, tasks, weight int32, parent string) v1alpha1.Group {
	return v1alpha1.Group{Name: name, Tasks: i32(tasks), CPUWeight: i32(weight), Parent: parent, Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}}
}

var hogLayouts = []hogLayout{
	// The case: on 2 CPUs the kernel gives 0.50 / 1.00 / 0.50.
	{"2+1+1 flat", []v1alpha1.Group{hogGroup("a", 2, 100, ""), hogGroup("b", 1, 400, ""), hogGroup("c", 1, 100, "")}},
	// Nested, as Kubernetes nests pods under QoS slices.
	{"nested", []v1alpha1.Group{{Name: "pods", CPUWeight: i32(300)}, hogGroup("p1", 2, 100, "pods"), hogGroup("p2", 1, 300, "pods"), hogGroup("sys", 1, 100, "")}},
}

// hogRunner starts one layout's hogs one way and returns a stop function.
type hogRunner struct {
	name  string
	start func(t *testing.T, l *layout, groups []v1alpha1.Group, perturb bool) func()
}

var hogRunners = []hogRunner{
	{"schedlab Hog", func(t *testing.T, l *layout, groups []v1alpha1.Group, perturb bool) func() {
		var spec workload.Spec
		spec.WorkerBinary = selfBinary(t)
		for _, g := range groups {
			for i := range tasksOf(g) {
				spec.Tasks = append(spec.Tasks, workload.Task{Group: g.Name, Index: i, Pattern: *g.Pattern, Peer: -1, CgroupProcs: l.procs[g.Name], Perturb: perturb})
			}
		}
		s, err := workload.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := s.Stop(); err != nil {
				t.Error(err)
			}
		}
	}},
	{"sh spinner", func(t *testing.T, l *layout, groups []v1alpha1.Group, _ bool) func() {
		var p procs
		for _, g := range groups {
			for range tasksOf(g) {
				p.start(t, l.procs[g.Name], false, "/bin/sh", "-c", "while :; do :; done")
			}
		}
		return p.stop
	}},
	{"stress-ng loop", func(t *testing.T, l *layout, groups []v1alpha1.Group, _ bool) func() {
		var p procs
		for _, g := range groups {
			if n := tasksOf(g); n > 0 {
				p.start(t, l.procs[g.Name], false, "stress-ng", "--quiet", "--cpu", strconv.Itoa(n), "--cpu-method", "loop", "--timeout", "600")
			}
		}
		return p.stop
	}},
}

func tasksOf(g v1alpha1.Group) int {
	if g.Pattern == nil {
		return 0
	}
	return int(g.TaskCount())
}

// cpuRun is one runner's window: CPUs per group and the noise.
type cpuRun struct {
	cpu   map[string]float64
	noise float64
}

// compareCPU checks every group of a against b: within tol plus the CPU
// others took in either window. It returns what is out.
func compareCPU(order []string, a, b cpuRun, tol float64) []string {
	var out []string
	slack := tol + a.noise + b.noise
	for _, g := range order {
		if d := a.cpu[g] - b.cpu[g]; math.Abs(d) > slack {
			out = append(out, fmt.Sprintf("group %s: %.3f vs %.3f CPUs (tolerance %.3f with %.2f+%.2f CPUs of noise)", g, a.cpu[g], b.cpu[g], slack, a.noise, b.noise))
		}
	}
	return out
}

// TestHogMatchesSpinners runs each layout's hogs as schedlab workers, as
// plain shell spinners and as stress-ng loop workers, interleaved round by
// round in the same cgroups, and wants every group's CPU within 0.03 CPU of
// the spinners' or stress-ng's in the same round.
func TestHogMatchesSpinners(t *testing.T) {
	need(t, "stress-ng")
	for _, hl := range hogLayouts {
		t.Run(hl.name, func(t *testing.T) {
			n := newNode(t)
			l := n.layout(hl.groups)
			runs := map[string][]cpuRun{}
			// A group may be outside every reference in at most one round
			// in three: one clean-clone CI run had schedlab's group a at
			// 0.706 CPU against 0.532 and 0.499 in one round of the flat
			// layout (0.08 CPU of other load), inside in the others. A
			// worker that is wrong is outside in every round.
			outside := map[string][]string{}
			for round := range *rounds {
				for _, r := range hogRunners {
					stop := r.start(t, l, hl.groups, false)
					cpu, noise := n.cpuWindow(l)
					stop()
					runs[r.name] = append(runs[r.name], cpuRun{cpu, noise})
					for _, g := range l.order {
						row("Hog", hl.name, r.name, round+1, g, cpu[g], noise)
					}
				}
				// A group must be within the tolerance of at least one
				// reference of the round. The kernel splits the nested
				// layout two ways from window to window (p1/p2 0.426/0.99
				// or 0.48/0.94 on a quiet machine, the spinners and
				// schedlab alike), so two references of one round can be
				// 0.06 CPU apart; a worker outside both is wrong.
				for _, g := range l.order {
					var out []string
					for _, ref := range hogRunners[1:] {
						for _, p := range compareCPU([]string{g}, runs[hogRunners[0].name][round], runs[ref.name][round], 0.03) {
							out = append(out, ref.name+": "+p)
						}
					}
					if len(out) == len(hogRunners)-1 {
						msg := fmt.Sprintf("round %d, schedlab outside every reference: %s", round+1, strings.Join(out, "; "))
						t.Log(msg)
						outside[g] = append(outside[g], msg)
					}
				}
			}
			for _, g := range l.order {
				if len(outside[g]) > *rounds/3 {
					t.Errorf("group %s outside every reference in %d rounds of %d: %s", g, len(outside[g]), *rounds, strings.Join(outside[g], " | "))
				}
			}
		})
	}
}

// TestToleranceFailsAPerturbingWorker runs the 2+1+1 layout with workers
// whose work runs as an ordinary goroutine (the Go runtime preempts it and
// it sleeps while its P is handed around, as the workers did before) next
// to the spinners: the harness's checks — the CPU comparison or the
// workers' own invariants — must fail it.
func TestToleranceFailsAPerturbingWorker(t *testing.T) {
	hl := hogLayouts[0]
	n := newNode(t)
	l := n.layout(hl.groups)
	var spec workload.Spec
	for _, g := range hl.groups {
		for i := range tasksOf(g) {
			spec.Tasks = append(spec.Tasks, workload.Task{Group: g.Name, Index: i, Pattern: *g.Pattern, Peer: -1, CgroupProcs: l.procs[g.Name], Perturb: true})
		}
	}
	w, pcpu, pnoise := n.workerWindow(l, spec)
	pert := cpuRun{cpu: pcpu, noise: pnoise}
	stop := hogRunners[1].start(t, l, hl.groups, false)
	cpu, noise := n.cpuWindow(l)
	stop()
	problems := compareCPU(l.order, pert, cpuRun{cpu, noise}, 0.03)
	for _, g := range l.order {
		inv := workload.GroupInvariants(w, g)
		if why := workload.Perturbed(inv, tasksOf(hl.groups[slices.IndexFunc(hl.groups, func(x v1alpha1.Group) bool { return x.Name == g })]), w.Duration.Seconds()); why != "" {
			problems = append(problems, "group "+g+": "+why)
		}
		t.Logf("%s: perturbing workers: %+v", g, *inv)
		row("Hog perturbed", hl.name, "schedlab Hog, Perturb", 1, g, pert.cpu[g], pert.noise)
		row("Hog perturbed", hl.name, "sh spinner", 1, g, cpu[g], noise)
	}
	t.Logf("what the harness says of a perturbing worker: %q", problems)
	if len(problems) == 0 {
		t.Error("a worker whose work thread the Go runtime preempts passed every check")
	}
}

// latency is a summary of wakeup latencies in µs; late is the fraction of
// wake-ups lateUs or more late.
type latency struct{ p50, p99, max, count, late float64 }

// lateUs separates a wake-up that ran at once (about 100 µs here, slack
// included) from one that waited for a tick: with preemption off the
// waiting ones run at a tick, so their lateness is the distance from the
// tool's phase to a later tick (595, 1595, … µs for a tool at 450 µs;
// 345, … for one at 700 µs; see probePhasesUs), and a tool's p99 jumps
// between these steps with the fraction that waited. That fraction,
// counted below the first step of every tool, compares tools at different
// phases.
const lateUs = 250

// cyclictestHistogram runs nothing: it reads cyclictest -h output into
// percentiles and the fraction lateUs or more late.
func cyclictestHistogram(out string) (latency, error) {
	h, err := cyclictest.Parse(strings.NewReader(out))
	if err != nil {
		return latency{}, err
	}
	total := float64(h.Total())
	return latency{p50: h.Quantile(0.5), p99: h.Quantile(0.99), max: float64(max(h.Max(), 0)), count: total, late: float64(h.Beyond(lateUs)) / total}, nil
}

// sessionsCPU is the CPU time so far (utime + stime, all threads) of every
// process in the given sessions.
func sessionsCPU(sids []int) time.Duration {
	ents, _ := os.ReadDir("/proc")
	var ticks uint64
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+2:]) // f[0] is field 3
		if len(f) < 13 {
			continue
		}
		sid, _ := strconv.Atoi(f[3]) // field 6
		if !slices.Contains(sids, sid) {
			continue
		}
		u, _ := strconv.ParseUint(f[11], 10, 64) // field 14
		k, _ := strconv.ParseUint(f[12], 10, 64) // field 15
		ticks += u + k
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ 100
}

// measuringThreadsCPU is the CPU time so far of pid's threads other than
// its main thread, and of the main thread.
func measuringThreadsCPU(pid int) (measuring, main time.Duration) {
	fs, _ := procfs.NewFS("/proc")
	ths, err := fs.AllThreads(pid)
	if err != nil {
		return 0, 0
	}
	for _, th := range ths {
		ss, err := th.Schedstat()
		if err != nil {
			continue
		}
		if th.PID == pid {
			main += time.Duration(ss.RunningNanoseconds)
		} else {
			measuring += time.Duration(ss.RunningNanoseconds)
		}
	}
	return measuring, main
}

// median is the middle value of x (the upper one of an even count).
func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}

// mean is the average of x.
func mean(x []float64) float64 {
	var t float64
	for _, v := range x {
		t += v
	}
	return t / float64(len(x))
}

// cBinary builds one of the reference programs in testdata.
func cBinary(t *testing.T, name string) string {
	t.Helper()
	need(t, "cc")
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cc", "-O2", "-Wall", "-o", bin, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("building the reference %s: %v\n%s", name, err, out)
	}
	return bin
}

// probePhasesUs are the phases, in µs of the 1 ms interval, at which the
// three latency tools sleep, one each, rotated from round to round.
// Sleepers with one period whose deadlines fall within a timer slack of
// each other on one CPU share a timer interrupt: left to their start
// times, two tools were seen 20 µs apart, one waking 30 µs early and the
// other behind it (p50 78 vs 107 µs). And a phase is not neutral: the
// tick lies on the same grid (tick_init_jiffy_update), and a hog picked at
// a tick keeps its slice protection (RUN_TO_PARITY) for 1.4 ms on 2 CPUs,
// so a tool whose phase puts more of its wake-ups inside that window
// waits more (at 250 µs, two of four wake-ups per tick, the probe had 2.6×
// the C probe's late wake-ups on a quiet machine: 0.023 vs 0.009). Where
// the tick sits on the grid depends on the machine: on one CI machine the
// probe at a fixed 450 µs had p50 130 µs and 0.043-0.049 late in two
// rounds of three, against 98-99 µs and 0.001-0.003 for cyclictest at
// 750 µs. So no tool keeps a phase: over three rounds each tool sleeps at
// each phase once, and the comparisons below are between tools that saw
// the same phases. All phases lie at most 700 µs into the interval: a
// wake-up that waits is rescued about 45 µs after the next millisecond
// here, so a tool at phase φ has its first step at 1045-φ µs, and lateUs
// must stay below every tool's first step (a tool at 800 µs counted 7 and
// 45 late wake-ups in 3000 where its neighbours counted 50-340).
var probePhasesUs = [3]int64{450, 575, 700}

// latencyRounds holds, by tool (the probe, cyclictest, the C probe), one
// figure per round.
type latencyRounds struct {
	p50s, p99s, lates, cpus [3][]float64
	noises                  []float64
}

// TestLatencyProbeMatchesCyclictest runs a schedlab LatencyProbe and two
// references at the same time, each alone in a session of its own, while 6
// spinners load the CPUs from one other session, with autogroup on and off:
// cyclictest (-m, clock_nanosleep at absolute deadlines, SCHED_OTHER, the
// default 50 µs timer slack) and testdata/probe.c (the same loop in C with
// no other thread: cyclictest's main thread wakes every 10 ms in its
// process, and so in its autogroup). The rounds are measured in sets
// (inSets): a probe that is wrong (a relative sleep, a tick late, a
// perturbed window) fails every set, while one set of rounds, each moving
// the late fraction 10× for every tool, can fail by luck.
func TestLatencyProbeMatchesCyclictest(t *testing.T) {
	need(t, "cyclictest", "setsid")
	cprobe := cBinary(t, "probe")
	const interval = time.Millisecond
	// CPU per wake-up of quiet windows, by tool, over both autogroup modes.
	var quietCPUs [3][]float64
	for _, ag := range []v1alpha1.AutogroupMode{v1alpha1.AutogroupEnabled, v1alpha1.AutogroupDisabled} {
		t.Run("autogroup "+string(ag), func(t *testing.T) {
			n := newNode(t)
			settings, err := host.Plan(n.caps, &v1alpha1.Knobs{Autogroup: ag})
			var ue *host.UnsupportedError
			if errors.As(err, &ue) {
				t.Skipf("autogroup %s: %v", ag, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := n.ch.Apply(settings); err != nil {
				t.Fatal(err)
			}
			inSets(t, func() ([]string, bool) {
				r := measureLatencyRounds(t, n, cprobe, interval, ag)
				// Other processes' CPU lands on the probe and the
				// references unevenly (p50 119 vs 98 µs and 24.5 vs
				// 15.6 µs of CPU per wake-up were seen with 1.7 CPUs of
				// other load): the comparisons need a quiet machine;
				// otherwise they are logged, and a set that was not
				// quiet is measured again like a set that failed.
				if slices.Max(r.noises) > quiet {
					t.Logf("other processes used %.2f CPUs in some round (%v): comparisons not made; p50 %v vs %v and %v, p99 %v vs %v and %v, fractions ≥ %d µs %v vs %v and %v, CPU per wake-up %v vs %v and %v ns",
						slices.Max(r.noises), r.noises, r.p50s[0], r.p50s[1], r.p50s[2], r.p99s[0], r.p99s[1], r.p99s[2], lateUs, r.lates[0], r.lates[1], r.lates[2], r.cpus[0], r.cpus[1], r.cpus[2])
					return nil, false
				}
				for i := range r.cpus {
					quietCPUs[i] = append(quietCPUs[i], r.cpus[i]...)
				}
				return compareLatencyRounds(r, ag), true
			})
		})
	}
	// CPU per wake-up: the probe's median over the quiet windows of both
	// modes at most 1.5× the dearer reference's. Every tool's figure moves
	// by ±40 % from one window to the next (9.6-19.3 µs for cyclictest's
	// measuring thread, 11.2-21.9 µs for the C probe, 10.5-23.1 µs for the
	// probe were seen, each the dearest in some window), so three windows
	// of one mode are too few.
	if len(quietCPUs[0]) < 3 || len(quietCPUs[1]) == 0 || len(quietCPUs[2]) == 0 {
		t.Logf("fewer than 3 quiet windows: CPU per wake-up not compared (%v vs %v and %v ns)", quietCPUs[0], quietCPUs[1], quietCPUs[2])
		return
	}
	if a, b, c := median(quietCPUs[0]), median(quietCPUs[1]), median(quietCPUs[2]); a > 1.5*max(b, c) {
		t.Errorf("%.1f µs of CPU per wake-up vs cyclictest's %.1f µs and the C probe's %.1f µs: more than 1.5× (windows %v vs %v and %v ns)", a/1e3, b/1e3, c/1e3, quietCPUs[0], quietCPUs[1], quietCPUs[2])
	}
}

// measureLatencyRounds runs the three latency tools side by side for
// 2 × *rounds rounds beside 6 spinners in a session of their own, the
// tools' phases rotated from round to round (probePhasesUs). Twice the
// rounds of the other comparisons: one C probe alone at one phase, with
// autogroup on, counted from 14 to 343 wake-ups 250 µs or more late in
// 3000 in consecutive windows (p50 97-154 µs), so a mean over three
// windows is not a figure for a tool.
func measureLatencyRounds(t *testing.T, n *node, cprobe string, interval time.Duration, ag v1alpha1.AutogroupMode) latencyRounds {
	t.Helper()
	var r latencyRounds
	root := n.cg.RootProcs()
	for round := range 2 * *rounds {
		var load procs
		// The spinners are the session leader's children: each dies with
		// it (setpriv --pdeathsig), and the leader with this test
		// (Pdeathsig), so a test killed at its timeout leaves no load
		// behind (one did, six spinners for 19 minutes).
		load.start(t, root, true, "/bin/sh", "-c", "P=; command -v setpriv >/dev/null && P='setpriv --pdeathsig KILL'; for i in 1 2 3 4 5 6; do $P sh -c 'while :; do :; done' & done; wait")
		// The probe, cyclictest and the C probe sleep at phases
		// round, round+1 and round+2 of probePhasesUs.
		var phaseUs [3]int64
		for i := range phaseUs {
			phaseUs[i] = probePhasesUs[(round+i)%len(probePhasesUs)]
		}
		s, err := workload.Start(context.Background(), workload.Spec{WorkerBinary: selfBinary(t), RootProcs: root, Tasks: []workload.Task{
			{Group: "probe", Session: "probe", Pattern: v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: &metav1.Duration{Duration: interval}}, Peer: -1, PhaseNs: phaseUs[0] * 1000},
		}})
		if err != nil {
			load.stop()
			t.Fatal(err)
		}
		secs := int(math.Ceil((*warmupLen + *windowLen + 2*time.Second).Seconds()))
		var refs procs
		var out, cout strings.Builder
		cmd := refs.startOut(t, &out, root, true, "cyclictest", "-m", "-q", "-i", strconv.Itoa(int(interval.Microseconds())), "-h", "30000", "-D", strconv.Itoa(secs), "--secaligned", strconv.FormatInt(phaseUs[1], 10))
		ccmd := refs.startOut(t, &cout, root, true, cprobe, strconv.FormatInt(interval.Nanoseconds(), 10), strconv.FormatInt(warmupLen.Nanoseconds(), 10), strconv.FormatInt(windowLen.Nanoseconds(), 10), strconv.FormatInt(phaseUs[2]*1000, 10))
		time.Sleep(*warmupLen)
		sids := []int{load.cmds[0].Process.Pid, cmd.Process.Pid, ccmd.Process.Pid}
		if sid, err := unix.Getsid(s.PIDs()[0]); err == nil {
			sids = append(sids, sid)
		}
		c0, _ := measuringThreadsCPU(cmd.Process.Pid)
		_, cc0 := measuringThreadsCPU(ccmd.Process.Pid) // one thread: its main
		s0, b0 := sessionsCPU(sids), machineBusy(t)
		t0 := time.Now()
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(*windowLen)
		w, err := s.End()
		if err != nil {
			t.Fatal(err)
		}
		c1, _ := measuringThreadsCPU(cmd.Process.Pid)
		_, cc1 := measuringThreadsCPU(ccmd.Process.Pid)
		wall := time.Since(t0)
		// Everything but the four sessions: the load's, the two
		// references' and the probe's.
		noise := max(0, ((machineBusy(t)-b0)-(sessionsCPU(sids)-s0)).Seconds()/wall.Seconds())
		r.noises = append(r.noises, noise)
		_ = s.Stop()
		err = cmd.Wait()
		cerr := ccmd.Wait()
		load.stop()
		if err != nil {
			t.Fatalf("cyclictest: %v", err)
		}
		if cerr != nil {
			t.Fatalf("testdata/probe.c: %v", cerr)
		}
		cl, err := cyclictestHistogram(out.String())
		if err != nil {
			t.Fatal(err)
		}
		var cn, c50, c99, cmax, clate float64
		if _, err := fmt.Sscan(cout.String(), &cn, &c50, &c99, &cmax, &clate); err != nil || cn == 0 {
			t.Fatalf("testdata/probe.c printed %q: %v", cout.String(), err)
		}
		m := workload.GroupMetrics(w, "probe")
		pl := m.WakeupLatencyUs
		var plate float64
		if h := w.Tasks[0].Latency; h.Count() > 0 {
			plate = 1 - float64(h.CountBelow(lateUs*1000))/float64(h.Count())
		}
		r.lates[0], r.lates[1], r.lates[2] = append(r.lates[0], plate), append(r.lates[1], cl.late), append(r.lates[2], clate/cn)
		probeCPU := float64(w.Tasks[0].CPUNs) / float64(w.Tasks[0].Ops)
		cycPer := float64((c1 - c0).Nanoseconds()) / (wall.Seconds() / interval.Seconds())
		cPer := float64((cc1 - cc0).Nanoseconds()) / (wall.Seconds() / interval.Seconds())
		r.p50s[0], r.p50s[1], r.p50s[2] = append(r.p50s[0], pl.P50), append(r.p50s[1], cl.p50), append(r.p50s[2], c50)
		r.p99s[0], r.p99s[1], r.p99s[2] = append(r.p99s[0], pl.P99), append(r.p99s[1], cl.p99), append(r.p99s[2], c99)
		r.cpus[0], r.cpus[2] = append(r.cpus[0], probeCPU), append(r.cpus[2], cPer)
		// cyclictest's measuring thread's CPU went down across a window
		// once (-1.2 µs per wake-up): a thread's schedstat that could not
		// be read counts as 0. Such a window has no figure rather than a
		// wrong one.
		if c1 > c0 {
			r.cpus[1] = append(r.cpus[1], cycPer)
		} else {
			t.Logf("round %d: cyclictest's measuring threads' CPU read %v then %v: no CPU figure for this window", round+1, c0, c1)
		}
		tool := func(name string, i int) string { return fmt.Sprintf("%s @%d µs", name, phaseUs[i]) }
		row("LatencyProbe", "autogroup "+string(ag), tool("schedlab LatencyProbe", 0), round+1, "p50/p99/max µs", fmt.Sprintf("%.0f / %.0f / %.0f", pl.P50, pl.P99, pl.Max), fmt.Sprintf("%.1f µs CPU per wake-up; %.4f ≥ %d µs; %.2f CPUs of noise", probeCPU/1e3, plate, lateUs, noise))
		row("LatencyProbe", "autogroup "+string(ag), tool("cyclictest -m", 1), round+1, "p50/p99/max µs", fmt.Sprintf("%.0f / %.0f / %.0f", cl.p50, cl.p99, cl.max), fmt.Sprintf("%.1f µs CPU per wake-up (measuring thread); %.4f ≥ %d µs", cycPer/1e3, cl.late, lateUs))
		row("LatencyProbe", "autogroup "+string(ag), tool("C probe", 2), round+1, "p50/p99/max µs", fmt.Sprintf("%.0f / %.0f / %.0f", c50, c99, cmax), fmt.Sprintf("%.1f µs CPU per wake-up; %.4f ≥ %d µs", cPer/1e3, clate/cn, lateUs))
		if inv := workload.GroupInvariants(w, "probe"); workload.Perturbed(inv, 1, w.Duration.Seconds()) != "" {
			t.Errorf("round %d: the probe perturbed its own window: %+v", round+1, *inv)
		}
	}
	return r
}

// compareLatencyRounds compares the probe's rounds with the references'
// and returns what is out of bounds.
func compareLatencyRounds(r latencyRounds, ag v1alpha1.AutogroupMode) []string {
	var failed []string
	// p50: the probe's median over the rounds within 10 % of the
	// references' medians. (Before the tools had phases of their own, the
	// probe's p50 was 9-16 % above both references' in two runs of five
	// with autogroup off: their timers coalesced.)
	const tol = 0.10
	lo, hi := min(median(r.p50s[1]), median(r.p50s[2])), max(median(r.p50s[1]), median(r.p50s[2]))
	if a := median(r.p50s[0]); a < (1-tol)*lo-2 || a > (1+tol)*hi+2 {
		failed = append(failed, fmt.Sprintf("p50 %.0f µs vs cyclictest %.0f µs and the C probe %.0f µs (rounds %v vs %v and %v): more than %.0f%% outside", a, median(r.p50s[1]), median(r.p50s[2]), r.p50s[0], r.p50s[1], r.p50s[2], 100*tol))
	}
	// p99: the probe's median over the rounds at most 1.5× the longer of
	// the references' medians (plus 20 µs), and with autogroup on at least
	// two thirds of the shorter one's (minus 20 µs). A round's p99 is no
	// figure for a tool: it sits on a knee, where the fraction that waited
	// crosses 1 %, and that fraction moves 10× from one window to the next
	// (see below). With autogroup on the waits are the other tools'
	// business too: a wake-up that did not preempt a spinner runs when the
	// next tool wakes on its CPU, 125-250 µs later or at the next
	// millisecond, so every tool's p99 jumps between about 120, 240, 360
	// and 440 µs. One CI set of six rounds had the probe at 361, 243,
	// 443, 359, 245 and 157 µs, cyclictest at 120-133 µs in every round,
	// and the C probe at 119-358 µs; the next set had the probe at 148-361
	// µs and the references at 143-243 and 125-243 µs. A per-round band
	// (30 % of the references' range, the rule before) failed both sets.
	// With autogroup off, where 4-12 % of wake-ups wait for a tick, a
	// tool's p99 is one of the steps of its phase and moves a whole
	// millisecond with the fraction that waited: the probe's p99 was below
	// both references' in some rounds (1364 vs 2298 and 1576 µs) while its
	// fraction of waiting wake-ups was not smaller. There only a longer
	// tail fails, and the late fractions below decide. A probe that is
	// wrong in its tail (a perturbed window, a tick late) is far outside
	// in most rounds, which moves the median.
	{
		a := median(r.p99s[0])
		b, c := median(r.p99s[1]), median(r.p99s[2])
		if a > 1.5*max(b, c)+20 || (ag != v1alpha1.AutogroupDisabled && a < min(b, c)*2/3-20) {
			failed = append(failed, fmt.Sprintf("p99 %.0f µs vs cyclictest %.0f µs and the C probe %.0f µs (medians; rounds %v vs %v and %v): outside 1.5× of the references", a, b, c, r.p99s[0], r.p99s[1], r.p99s[2]))
		}
	}
	// The fraction of wake-ups that waited (lateUs or more late),
	// averaged over the rounds: within a factor 2 of the references'
	// (plus 0.005 for windows where few waited). Per round it moves 10×
	// (0.009-0.12 with autogroup off); the means over four rounds were
	// within 25 % of each other (probe 0.069 vs 0.062 and 0.055 off, 0.035
	// vs 0.043 and 0.038 on). A probe that woke a tick late, or perturbed
	// its window, is far outside.
	if a, b, c := mean(r.lates[0]), mean(r.lates[1]), mean(r.lates[2]); a > 2*max(b, c)+0.005 || a < 0.5*min(b, c)-0.005 {
		failed = append(failed, fmt.Sprintf("%.4f of the wake-ups %d µs or more late vs cyclictest's %.4f and the C probe's %.4f: more than 2× apart (rounds %v vs %v and %v)", a, lateUs, b, c, r.lates[0], r.lates[1], r.lates[2]))
	}
	return failed
}

// TestPingPongMatchesPerfPipe runs a schedlab PingPong pair and perf bench
// sched pipe (two processes, one round trip per loop) in the same cgroup,
// interleaved: round trips per second within 15 %.
func TestPingPongMatchesPerfPipe(t *testing.T) {
	need(t, "perf")
	if err := exec.Command("perf", "bench", "sched", "pipe", "-l", "10").Run(); err != nil {
		t.Skipf("perf bench sched pipe does not run here: %v", err)
	}
	n := newNode(t)
	l := n.layout([]v1alpha1.Group{{Name: "pp", Tasks: i32(2), CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternPingPong}}})
	var ours, perfs, noises []float64
	for round := range *rounds {
		p := v1alpha1.Pattern{Type: v1alpha1.PatternPingPong}
		s, err := workload.Start(context.Background(), workload.Spec{WorkerBinary: selfBinary(t), Tasks: []workload.Task{
			{Group: "pp", Pattern: p, Peer: 1, CgroupProcs: l.procs["pp"]}, {Group: "pp", Index: 1, Pattern: p, Peer: 0, CgroupProcs: l.procs["pp"]},
		}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(*warmupLen)
		b0, t0 := machineBusy(t), time.Now()
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(*windowLen)
		w, err := s.End()
		if err != nil {
			t.Fatal(err)
		}
		noise := max(0, (machineBusy(t)-b0).Seconds()/time.Since(t0).Seconds()-float64(w.Tasks[0].CPUNs+w.Tasks[1].CPUNs)/1e9/w.Duration.Seconds())
		_ = s.Stop()
		ops := *workload.GroupMetrics(w, "pp").OpsPerSec
		ours = append(ours, ops)
		row("PingPong", "1 pair, 0 µs work", "schedlab PingPong", round+1, "round trips/s", ops, noise)
		if inv := workload.GroupInvariants(w, "pp"); workload.Perturbed(inv, 2, w.Duration.Seconds()) != "" {
			t.Errorf("round %d: the pair perturbed its own window: %+v", round+1, *inv)
		}
		loops := max(1000, int(ops*windowLen.Seconds()))
		var out strings.Builder
		var pp procs
		cmd := pp.startOut(t, &out, l.procs["pp"], false, "perf", "bench", "sched", "pipe", "-l", strconv.Itoa(loops))
		b0, t0 = machineBusy(t), time.Now()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("perf bench sched pipe: %v", err)
		}
		wall := time.Since(t0).Seconds()
		pp.cmds = nil
		var rate float64
		for _, line := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[1] == "ops/sec" {
				rate, _ = strconv.ParseFloat(f[0], 64)
			}
		}
		if rate == 0 {
			t.Fatalf("no ops/sec in perf's output: %q", out.String())
		}
		perfNoise := max(0, (machineBusy(t)-b0).Seconds()/wall-1) // the pair keeps about one CPU busy
		perfs = append(perfs, rate)
		noises = append(noises, noise, perfNoise)
		row("PingPong", "1 pair, 0 µs work", "perf bench sched pipe", round+1, "round trips/s", rate, perfNoise)
	}
	// The rate of a pair moves with where the kernel puts the two sides
	// (perf's own rounds moved 25 % here): the median of ours must lie within
	// 15 % of the range perf spanned over the same rounds.
	if slices.Max(noises) > quiet {
		t.Logf("other processes used %.2f CPUs in some window (%v): rates not compared: %v vs perf %v", slices.Max(noises), noises, ours, perfs)
		return
	}
	if a, lo, hi := median(ours), slices.Min(perfs), slices.Max(perfs); a < 0.85*lo || a > 1.15*hi {
		t.Errorf("%.0f round trips/s vs perf bench sched pipe's %.0f..%.0f (rounds %v vs %v): more than 15%% outside", a, lo, hi, ours, perfs)
	}
}

// TestPeriodicAndBurstFollowTheirSpec: a Periodic task's CPU is run/period,
// and a Burst task's CPU per burst is its mean run (the draws' exponential
// shape is checked by a KS test in package workload). Both runs are CPU
// time; what a task costs beyond them is the kernel's sleep and wake-up
// path, which a busy machine makes dearer (~90 µs per wake-up was seen at
// load 20 on this 2-CPU VM). That cost is measured in the same window by a
// LatencyProbe that only sleeps and wakes at the Periodic's rate, and added
// to the spec before comparing: CPU per period within 8 % of run plus one
// wake-up, and on a quiet machine the cgroup's CPU within 8 % of that per
// period.
//
// A set of rounds with a round out of bounds is measured once more (see
// inSets): one round in a few dozen carries tens of ms of CPU beside its
// runs that nothing in the window names (4374 µs per period and 0.1097
// CPUs were seen in one round of three at 0.03 CPUs of other load, its
// neighbours 4064 and 4052 µs, with no side-thread CPU). A worker that
// counts wall time, or spends CPU beside its run every period, is out of
// bounds in every set.
func TestPeriodicAndBurstFollowTheirSpec(t *testing.T) {
	n := newNode(t)
	l := n.layout([]v1alpha1.Group{
		{Name: "frame", CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic}},
		{Name: "build", CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternBurst}},
		{Name: "wake", CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe}},
	})
	inSets(t, func() ([]string, bool) { return periodicBurstSet(t, n, l) })
}

// periodicBurstSet measures *rounds rounds of TestPeriodicAndBurstFollowTheirSpec
// and returns what is out of bounds, and whether the machine was quiet in
// every round.
func periodicBurstSet(t *testing.T, n *node, l *layout) ([]string, bool) {
	t.Helper()
	const run, period, meanRun = 4 * time.Millisecond, 40 * time.Millisecond, 2 * time.Millisecond
	var failed []string
	quietSet := true
	for round := range *rounds {
		w, cpu, noise := n.workerWindow(l, workload.Spec{Tasks: []workload.Task{
			{Group: "frame", Pattern: v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic, Run: &metav1.Duration{Duration: run}, Period: &metav1.Duration{Duration: period}}, Peer: -1, CgroupProcs: l.procs["frame"]},
			{Group: "build", Pattern: v1alpha1.Pattern{Type: v1alpha1.PatternBurst, MeanRun: &metav1.Duration{Duration: meanRun}, MeanSleep: &metav1.Duration{Duration: 6 * time.Millisecond}}, Peer: -1, CgroupProcs: l.procs["build"], Seed: uint64(round + 1)},
			{Group: "wake", Pattern: v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: &metav1.Duration{Duration: period}}, Peer: -1, CgroupProcs: l.procs["wake"]},
		}})
		frameCPU := cpu["frame"]
		f, b, p := w.Tasks[0], w.Tasks[1], w.Tasks[2]
		wake := float64(p.CPUNs) / float64(max(1, p.Ops)) // ns of CPU per sleep and wake-up
		perPeriod := float64(f.CPUNs) / float64(max(1, f.Ops))
		perBurst := float64(b.CPUNs) / float64(max(1, b.Ops))
		row("Periodic", "4 ms every 40 ms", "schedlab Periodic", round+1, "CPUs (cgroup)", frameCPU, noise)
		row("Periodic", "4 ms every 40 ms", "schedlab Periodic", round+1, "CPU µs per period", perPeriod/1e3,
			fmt.Sprintf("a bare wake-up costs %.1f µs; misses %d of %d periods; %d involuntary switches, %.1f ms waiting to run, side threads %.2f ms",
				wake/1e3, f.Misses, f.Periods, f.Involuntary, float64(f.RunDelayNs)/1e6, float64(f.SideCPUNs)/1e6))
		row("Burst", "2 ms run / 6 ms sleep", "schedlab Burst", round+1, "CPU µs per burst", perBurst/1e3, fmt.Sprintf("%d bursts, %.1f/s", b.Ops, float64(b.Ops)/w.Duration.Seconds()))
		// Under load the run is also preempted, and every switch out and
		// back costs CPU too (4170 and 4379 µs per period were seen with
		// 1.7 CPUs of other load): 8 % on a quiet machine; on a busy one
		// only a run that is not CPU time or not once per period fails.
		// 8 % of the run still fails a worker that counts wall time or
		// spends the old runtime's 10-19 % beside its run.
		tol := 0.08
		if noise >= quiet {
			tol = 0.25
			quietSet = false
		}
		if want := float64(run.Nanoseconds()) + wake; math.Abs(perPeriod-want) > tol*float64(run.Nanoseconds()) {
			failed = append(failed, fmt.Sprintf("round %d: Periodic used %.1f µs per period, want %.1f µs (run + one wake-up) ± %.0f%% of run (%.2f CPUs of noise)", round+1, perPeriod/1e3, want/1e3, 100*tol, noise))
		}
		// The kernel charges the wake-up to the task as well (43-79 µs per
		// period measured here, 1-2 % of the run): 0.1021 CPUs was seen on a
		// quiet machine, so the cgroup's CPU is (run + one measured wake-up)
		// per period, within the tolerance below of run/period.
		if wantCPU := (float64(run.Nanoseconds()) + wake) / float64(period.Nanoseconds()); noise < quiet && math.Abs(frameCPU-wantCPU) > tol*0.1 {
			failed = append(failed, fmt.Sprintf("round %d: Periodic 4ms/40ms used %.4f CPUs on a quiet machine (%.2f CPUs of noise), want %.4f (run + one wake-up per 40 ms) ± %.4f", round+1, frameCPU, noise, wantCPU, tol*0.1))
		}
		// The mean of n exponential draws has a relative spread of 1/√n:
		// 5 %, or three spreads when the window holds fewer than 3600 bursts.
		if tol := math.Max(0.05, 3/math.Sqrt(float64(b.Ops))); math.Abs(perBurst-wake-float64(meanRun.Nanoseconds())) > tol*float64(meanRun.Nanoseconds()) {
			failed = append(failed, fmt.Sprintf("round %d: %.1f µs of CPU per burst over %d bursts (a wake-up costs %.1f µs), want 2 ms ± %.0f%%", round+1, perBurst/1e3, b.Ops, wake/1e3, 100*tol))
		}
		for _, g := range []string{"frame", "build", "wake"} {
			if inv := workload.GroupInvariants(w, g); workload.Perturbed(inv, 1, w.Duration.Seconds()) != "" {
				t.Errorf("round %d: %s perturbed its own window: %+v", round+1, g, *inv)
			}
		}
	}
	return failed, quietSet
}

// TestPeriodicMissesMatchAReferenceLoop runs a schedlab Periodic task and a
// reference periodic loop in C (testdata/periodic.c: clock_nanosleep to
// absolute boundaries, a spin of its own CPU time, a miss when the run ends
// after the period) in turn in the same cgroup, against the same 4 spinners
// in a sibling cgroup of equal weight, and compares the fraction of periods
// missed and the CPU per period.
//
// rt-app (Debian's rt-app 1.0) was tried first and given up: its run event
// spins a loop count calibrated once, and on this VM a loop's CPU cost moved
// from 10.4 to 19.4 ns between runs and by 40 % between rounds of one run,
// so its runs were not the Periodic's run.
func TestPeriodicMissesMatchAReferenceLoop(t *testing.T) {
	bin := cBinary(t, "periodic")
	n := newNode(t)
	l := n.layout([]v1alpha1.Group{
		{Name: "frame", CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic}},
		hogGroup("load", 4, 100, ""),
	})
	// 6 ms every 10 ms against 4 spinners: the frame's group entity gets
	// about two thirds of its CPU there, just above its 0.6, so about half
	// the periods miss (0.37-0.50 seen for both; 5 ms gave 0-7 %): a worker
	// that costs more per period or wakes later misses visibly more.
	// A set of rounds whose miss ratios disagree (or that was not quiet)
	// is measured once more, and the last quiet set decides: the ratios
	// come in runs of misses, so one window's ratio moves more than a
	// binomial error (0.37-0.59 for each tool, and once 0.393 for ours
	// against 0.502-0.560 for the loop's, outside by 0.003).
	inSets(t, func() ([]string, bool) { return periodicMissesSet(t, n, l, bin) })
}

// inSets runs measure, a set of rounds that returns what is out of bounds
// and whether the machine was quiet, up to twice: a set that fails or is
// not quiet is measured once more. A quiet set that passes ends it; the
// verdict is the last quiet set's (or a busy set's failures, which measure
// reports only for checks that hold on a busy machine). A worker that is
// wrong fails every set; one set of a few windows that move 10× from one
// to the next can fail by luck.
func inSets(t *testing.T, measure func() (failed []string, quiet bool)) {
	t.Helper()
	const sets = 2
	var failed []string
	for set := 1; set <= sets; set++ {
		f, quietSet := measure()
		if quietSet && len(f) == 0 {
			return
		}
		if quietSet || len(f) > 0 {
			failed = f
		}
		if set < sets {
			for _, x := range f {
				t.Logf("set %d of %d, measured again: %s", set, sets, x)
			}
		}
	}
	for _, f := range failed {
		t.Error(f)
	}
}

// periodicMissesSet measures *rounds rounds of TestPeriodicMissesMatchAReferenceLoop
// and returns what is out of bounds, and whether the machine was quiet.
func periodicMissesSet(t *testing.T, n *node, l *layout, bin string) ([]string, bool) {
	t.Helper()
	run, period := *periodicRun, 10*time.Millisecond
	// The reference loop's own window: its one thread's CPU, not the
	// cgroup's (the loop exits at its end).
	sample := func() (time.Duration, time.Duration, time.Time) { u, b, at := n.usage(l); return u["load"], b, at }
	noiseOver := func(l0, b0 time.Duration, t0 time.Time, frame time.Duration) float64 {
		l1, b1, t1 := sample()
		return max(0, ((b1-b0)-(l1-l0)-frame).Seconds()/t1.Sub(t0).Seconds())
	}
	var ours, refs, noises []float64
	var cpus [2][]float64
	for round := range *rounds {
		var load procs
		for range 4 {
			load.start(t, l.procs["load"], false, "/bin/sh", "-c", "while :; do :; done")
		}
		w, _, noise := n.workerWindow(l, workload.Spec{Tasks: []workload.Task{
			{Group: "frame", Pattern: v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic, Run: &metav1.Duration{Duration: run}, Period: &metav1.Duration{Duration: period}}, Peer: -1, CgroupProcs: l.procs["frame"]},
		}})
		f := w.Tasks[0]
		miss := float64(f.Misses) / float64(max(1, f.Periods))
		perPeriod := float64(f.CPUNs) / float64(max(1, f.Ops))
		row("Periodic misses", fmt.Sprintf("%v every %v, 4 spinners beside", run, period), "schedlab Periodic", round+1, "missed periods", miss, fmt.Sprintf("%d of %d; %.0f µs CPU per period; %.2f CPUs of noise", f.Misses, f.Periods, perPeriod/1e3, noise))

		var ref procs
		var out strings.Builder
		cmd := ref.startOut(t, &out, l.procs["frame"], false, bin, strconv.FormatInt(run.Nanoseconds(), 10), strconv.FormatInt(period.Nanoseconds(), 10), strconv.FormatInt(warmupLen.Nanoseconds(), 10), strconv.FormatInt(windowLen.Nanoseconds(), 10))
		time.Sleep(*warmupLen)
		l0, b0, t0 := sample()
		_, m0 := measuringThreadsCPU(cmd.Process.Pid) // one thread: its main
		time.Sleep(*windowLen - 50*time.Millisecond)
		_, m1 := measuringThreadsCPU(cmd.Process.Pid)
		refNoise := noiseOver(l0, b0, t0, m1-m0)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("reference periodic loop: %v", err)
		}
		load.stop()
		var periods, misses, runs, cpuNs int64
		if _, err := fmt.Sscan(out.String(), &periods, &misses, &runs, &cpuNs); err != nil || periods == 0 {
			t.Fatalf("reference periodic loop printed %q: %v", out.String(), err)
		}
		refMiss := float64(misses) / float64(periods)
		refPer := float64(cpuNs) / float64(runs)
		row("Periodic misses", fmt.Sprintf("%v every %v, 4 spinners beside", run, period), "C periodic loop", round+1, "missed periods", refMiss, fmt.Sprintf("%d of %d; %.0f µs CPU per run; %.2f CPUs of noise", misses, periods, refPer/1e3, refNoise))
		ours, refs = append(ours, miss), append(refs, refMiss)
		cpus[0], cpus[1] = append(cpus[0], perPeriod), append(cpus[1], refPer)
		noises = append(noises, noise, refNoise)
		if inv := workload.GroupInvariants(w, "frame"); workload.Perturbed(inv, 1, w.Duration.Seconds()) != "" {
			t.Errorf("round %d: the Periodic task perturbed its own window: %+v", round+1, *inv)
		}
	}
	// A miss ratio sits on a knee (a few % more CPU to the frame takes it
	// from many misses to none), so the median of ours is compared with the
	// range the reference spanned, widened by 0.05 and by two binomial
	// standard errors of one window's ratio.
	// The Periodic's CPU per period is its run plus its wake-up; the
	// loop's is its run alone: within 5 %.
	var failed []string
	if a, b := median(cpus[0]), median(cpus[1]); a < b || a > 1.05*b {
		failed = append(failed, fmt.Sprintf("the Periodic used %.0f µs of CPU per period vs the reference loop's %.0f µs per run: not within 5 %%", a/1e3, b/1e3))
	}
	if slices.Max(noises) > quiet {
		t.Logf("other processes used %.2f CPUs in some window (%v): miss ratios not compared: %v vs the reference loop's %v", slices.Max(noises), noises, ours, refs)
		return failed, false
	}
	a, lo, hi := median(ours), slices.Min(refs), slices.Max(refs)
	se := 2 * math.Sqrt(max(a, 0.01)*(1-min(a, 0.99))/(windowLen.Seconds()/period.Seconds()))
	if a < lo-0.05-se || a > hi+0.05+se {
		failed = append(failed, fmt.Sprintf("schedlab Periodic missed %.3f of its periods (rounds %v) vs the reference loop's %.3f..%.3f (rounds %v): outside by more than 0.05 + %.3f", a, ours, lo, hi, refs, se))
	}
	return failed, true
}

// TestCompareLatencyRounds checks the latency comparison itself on figures
// seen: a CI run's autogroup-on rounds where the probe (at a fixed 450 µs)
// waited 5-10× as often as cyclictest in two rounds of three must fail on
// p50 and on the late fraction; the same rounds with the probe's figures
// replaced by the C probe's pass. (The run's log kept no p99s but the C
// probe's last, 326 µs: every tool's p99s are set to it here, and a probe
// whose tail is 10× longer in two rounds fails.) A later CI run's p99s,
// which varied as much for every tool, pass.
func TestCompareLatencyRounds(t *testing.T) {
	seen := latencyRounds{
		p50s:  [3][]float64{{99.071, 130.815, 128.255}, {107, 98, 99}, {114, 112, 114}},
		p99s:  [3][]float64{{326, 326, 326}, {326, 326, 326}, {326, 326, 326}},
		lates: [3][]float64{{0.00704, 0.04339, 0.04850}, {0.00955, 0.00267, 0.00050}, {0.00369, 0.00941, 0.01080}},
	}
	failed := compareLatencyRounds(seen, v1alpha1.AutogroupEnabled)
	for _, want := range []string{"p50 128 µs", "0.0330 of the wake-ups"} {
		if !slices.ContainsFunc(failed, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("no failure starting %q in %q", want, failed)
		}
	}
	if len(failed) != 2 {
		t.Errorf("want the p50 and the late fraction to fail, got %q", failed)
	}
	long := seen
	long.p99s[0] = []float64{326, 3260, 3260}
	if failed := compareLatencyRounds(long, v1alpha1.AutogroupEnabled); !slices.ContainsFunc(failed, func(f string) bool { return strings.HasPrefix(f, "p99 ") }) {
		t.Errorf("a probe with 10× the tail in two rounds of three passed the p99 comparison: %q", failed)
	}
	// A later CI run's two sets of six rounds (autogroup on), which the
	// per-round rule before failed: p99s as seen, the other figures the
	// same for every tool. A probe whose tail is twice the longer
	// reference's in every round fails.
	for _, p99s := range [][3][]float64{
		{{361.471, 243.199, 443.391, 359.423, 245.247, 157.183}, {120, 127, 133, 123, 124, 132}, {159, 241, 242, 119, 358, 235}},
		{{239.103, 147.967, 157.183, 359.423, 241.151, 361.471}, {223, 160, 222, 243, 143, 232}, {138, 237, 125, 146, 145, 243}},
	} {
		set := latencyRounds{p99s: p99s}
		for i := range 3 {
			set.p50s[i] = []float64{100, 100, 100, 100, 100, 100}
			set.lates[i] = []float64{0.01, 0.01, 0.01, 0.01, 0.01, 0.01}
		}
		if failed := compareLatencyRounds(set, v1alpha1.AutogroupEnabled); len(failed) > 0 {
			t.Errorf("a CI set's p99s failed: %q", failed)
		}
		long := set
		long.p99s[0] = make([]float64, len(p99s[0]))
		for i := range long.p99s[0] {
			long.p99s[0][i] = 2 * max(p99s[1][i], p99s[2][i])
		}
		if failed := compareLatencyRounds(long, v1alpha1.AutogroupEnabled); !slices.ContainsFunc(failed, func(f string) bool { return strings.HasPrefix(f, "p99 ") }) {
			t.Errorf("a probe with twice the references' tail in every round passed: %q", failed)
		}
	}
	like := seen
	like.p50s[0], like.p99s[0], like.lates[0] = like.p50s[2], like.p99s[2], like.lates[2]
	if failed := compareLatencyRounds(like, v1alpha1.AutogroupEnabled); len(failed) > 0 {
		t.Errorf("the C probe's own rounds as the probe's failed: %q", failed)
	}
}
