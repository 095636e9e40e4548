// Command validation turns stored `schedlab run` measurements into the
// table of internal/simengine/VALIDATION.md.
//
// It finds every run directory under a tree (a directory holding the
// noderun.json that `schedlab run --output-dir` wrote), replays each run with
// a given schedlab build (`schedlab run --replay DIR/noderun.json -f FILE -o
// json`), and prints per scenario × variant × group the measured CPU (mean of
// the windows with its 95 % t-interval) next to the predicted one (mean of
// the runs' predictions and their range), the wake-up percentiles, and the
// fractions of wake-ups later than 100 µs, 1 ms and 10 ms (measured: k of N
// over all windows; predicted: the mean of the runs' predictions), each
// judged by the rules of VALIDATION.md's "How a row is judged"; then the
// count of rows held. See README.md.
//
// It imports the API types and internal/experiment's report; it runs the
// simulator only through the schedlab binary it is given, so that one
// build of this program can judge any build of schedlab.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/internal/experiment"
)

type options struct {
	root     string
	schedlab string
	cache    string
	jobs     int
	order    []string
	names    Names
	runs     bool
	medians  bool
	summary  bool
	switches bool
	// cyclictest also prints the reference runs stored beside the runs
	// (directories holding cyclictest.txt; see RefRun).
	cyclictest bool
	// pauses, when set, is written into every run's calibration window
	// before the replay, where it takes the place of the pauses the run's
	// Hog windows measured (schedlab run --replay uses those otherwise).
	pauses *v1alpha1.NodeConstants
	// replicas, when above 0, replays with that many seeds per prediction
	// (the experiment's simulation.replicas) instead of the experiment's.
	replicas int
	// timerPath, when set, is passed to the replays as --timer-path
	// (in-window, edges, none): where each window's timer path comes from.
	timerPath string
}

func main() {
	var o options
	var order, aliases, pauses string
	flag.StringVar(&o.schedlab, "schedlab", "bin/schedlab", "the schedlab binary whose simulator predicts the runs again (--replay)")
	flag.StringVar(&o.cache, "cache", "", "directory for the replays' output: kept, and reused by later calls instead of replaying; one JSON per run, at the run's path under a subdirectory named by what the replay depends on (the schedlab binary's contents, the runs tree's absolute path, -replicas, -host-pauses and -timer-path), so one directory serves every build and campaign")
	flag.IntVar(&o.jobs, "j", 1, "replays at once (each already runs its seeds on all CPUs)")
	flag.StringVar(&order, "order", "", "scenarios in table order, comma-separated (others follow in the order of their first run)")
	flag.StringVar(&aliases, "alias", "", "noise-source names to print otherwise, NAME=TEXT,... (e.g. a tool's process name as what it is)")
	flag.BoolVar(&o.runs, "runs", false, "also print the runs table (times, load, others' CPUs, noise sources, timer path, re-run windows)")
	flag.BoolVar(&o.medians, "medians", false, "also print the latency rows' medians and ranges of p50 and p99")
	flag.BoolVar(&o.switches, "switches", false, "also print the context-switch rows: voluntary and involuntary switches per second, measured against predicted (within ×1.5 or 5 per second)")
	flag.BoolVar(&o.cyclictest, "cyclictest", false, "also print the cyclictest runs stored under the tree (directories holding cyclictest.txt, named by their variant), one by one and pooled per variant")
	flag.BoolVar(&o.summary, "summary", false, "also print a summary of the runs (count, times, load, noise)")
	flag.StringVar(&pauses, "host-pauses", "", "replay with these host pauses: PER_HOUR:P5,P25,P50,P75,P90,P95,P99 (pause lengths in ns at those levels), written into each run's calibration constants, where they take the place of the pauses the run measured (runs before the agent measured them have none: windows with a Hog record them)")
	flag.StringVar(&o.timerPath, "timer-path", "", "replay with each window's timer path from this source (schedlab run --timer-path: in-window, edges or none; default the build's own default)")
	flag.IntVar(&o.replicas, "replicas", 0, "replay with this many seeds per prediction (1-32) instead of the experiment's simulation.replicas (default 5): a row whose tail rests on a few simulated events needs more")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./hack/validation [flags] RUNS-DIR\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	o.root = flag.Arg(0)
	if o.replicas < 0 || o.replicas > 32 {
		fmt.Fprintf(os.Stderr, "-replicas %d: want 1 to 32 (0: the experiment's)\n", o.replicas)
		os.Exit(2)
	}
	if pauses != "" {
		k, err := parseHostPauses(pauses)
		if err != nil {
			fmt.Fprintf(os.Stderr, "-host-pauses %q: %v\n", pauses, err)
			os.Exit(2)
		}
		o.pauses = k
	}
	if order != "" {
		o.order = strings.Split(order, ",")
	}
	o.names = Names{}
	if aliases != "" {
		for _, a := range strings.Split(aliases, ",") {
			k, v, ok := strings.Cut(a, "=")
			if !ok {
				fmt.Fprintf(os.Stderr, "-alias %q: want NAME=TEXT\n", a)
				os.Exit(2)
			}
			o.names[k] = v
		}
	}
	if o.cache != "" {
		k, err := cacheKey(&o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "-cache: %v\n", err)
			os.Exit(2)
		}
		o.cache = filepath.Join(o.cache, k)
	}
	if err := run(context.Background(), os.Stdout, &o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// cacheKey names the replays' outputs by everything they depend on: the
// binary that replays (its contents: a rebuilt binary at the same path is
// another simulator), the runs tree (two campaigns hold the same relative
// paths, r1/mixed and so on) and the options written into each replay
// (-timer-path only when set: the default's keys are those of before).
// Before, the cache was keyed by the run's relative path alone, and a
// directory reused for another campaign silently gave that campaign's
// table the first one's predictions.
func cacheKey(o *options) (string, error) {
	h := sha256.New()
	f, err := os.Open(o.schedlab)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	root, err := filepath.Abs(o.root)
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(o.pauses)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "\x00%s\x00%d\x00%s", root, o.replicas, p)
	if o.timerPath != "" {
		fmt.Fprintf(h, "\x00timer-path=%s", o.timerPath)
	}
	return fmt.Sprintf("%s-%x", filepath.Base(root), h.Sum(nil)[:8]), nil
}

func run(ctx context.Context, w io.Writer, o *options) error {
	dirs, err := findRuns(o.root)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no noderun.json under %s", o.root)
	}
	runs := make([]*Run, len(dirs))
	errs := make([]error, len(dirs))
	sem := make(chan struct{}, max(o.jobs, 1))
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			runs[i], errs[i] = loadRun(ctx, o, d)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rows, err := BuildRows(runs, o.order)
	if err != nil {
		return err
	}
	WriteTable(w, rows)
	fmt.Fprintln(w)
	WriteTally(w, Count(rows))
	if o.medians {
		fmt.Fprintln(w)
		WriteMedians(w, rows)
	}
	if o.switches {
		fmt.Fprintln(w)
		WriteSwitches(w, rows)
	}
	if o.runs {
		fmt.Fprintln(w)
		WriteRuns(w, runs, rows, o.names)
	}
	if o.cyclictest {
		refs, err := findRefRuns(o.root)
		if err != nil {
			return err
		}
		if len(refs) == 0 {
			return fmt.Errorf("-cyclictest: no cyclictest.txt under %s", o.root)
		}
		fmt.Fprintln(w)
		WriteCyclictest(w, refs)
	}
	if o.summary {
		fmt.Fprintln(w)
		WriteSummary(w, runs, o.names)
	}
	return nil
}

// findRuns lists the directories under root that hold a noderun.json,
// relative to root.
func findRuns(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "noderun.json" {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// loadRun reads a run's stored status and its replay's report (from the
// cache, or replaying it).
func loadRun(ctx context.Context, o *options, rel string) (*Run, error) {
	dir := filepath.Join(o.root, rel)
	b, err := os.ReadFile(filepath.Join(dir, "noderun.json"))
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: rel}
	if err := json.Unmarshal(b, &r.Status); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if l, err := os.ReadFile(filepath.Join(dir, "loadavg")); err == nil {
		if f := strings.Fields(string(l)); len(f) > 0 {
			r.Load = f[0]
		}
	}
	var out []byte
	cached := ""
	if o.cache != "" {
		cached = filepath.Join(o.cache, rel+".json")
		out, err = os.ReadFile(cached)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if out == nil {
		if out, err = replay(ctx, o.schedlab, dir, o.pauses, o.replicas, o.timerPath); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		if cached != "" {
			if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(cached, out, 0o644); err != nil {
				return nil, err
			}
		}
	}
	r.Pred = &experiment.Report{}
	if err := json.Unmarshal(out, r.Pred); err != nil {
		return nil, fmt.Errorf("%s: replay output: %w", rel, err)
	}
	if r.Pred.Experiment == "" {
		return nil, fmt.Errorf("%s: the replay's report names no experiment", rel)
	}
	return r, nil
}

// experimentFile is the experiment the run measured: experiment.yaml in
// its directory, or else one written from the spec that its report.json
// records.
func experimentFile(dir string) (path string, cleanup func(), err error) {
	p := filepath.Join(dir, "experiment.yaml")
	if _, err := os.Stat(p); err == nil {
		return p, func() {}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return "", nil, fmt.Errorf("neither experiment.yaml nor report.json: %w", err)
	}
	var rep experiment.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return "", nil, fmt.Errorf("report.json: %w", err)
	}
	if rep.Spec == nil || rep.Experiment == "" {
		return "", nil, errors.New("report.json records no experiment spec: store the experiment file as experiment.yaml beside noderun.json")
	}
	exp := v1alpha1.SchedExperiment{Spec: *rep.Spec}
	exp.APIVersion = v1alpha1.GroupVersion.String()
	exp.Kind = "SchedExperiment"
	exp.Name = rep.Experiment
	return writeTemp("validation-*.json", &exp)
}

// replay predicts the run in dir again with the given schedlab binary, with
// the host pauses of pauses (nil: the run's own) in its calibration window
// and replicas seeds per prediction (0: the experiment's), and the windows'
// timer paths from timerPath ("": the build's default).
func replay(ctx context.Context, bin, dir string, pauses *v1alpha1.NodeConstants, replicas int, timerPath string) ([]byte, error) {
	exp, cleanup, err := experimentFile(dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if replicas > 0 {
		var clean func()
		if exp, clean, err = withReplicas(exp, replicas); err != nil {
			return nil, err
		}
		defer clean()
	}
	nr := filepath.Join(dir, "noderun.json")
	if pauses != nil {
		var clean func()
		if nr, clean, err = withHostPauses(nr, pauses); err != nil {
			return nil, err
		}
		defer clean()
	}
	var stdout, stderr bytes.Buffer
	args := []string{"run", "--replay", nr, "-f", exp, "-o", "json"}
	if timerPath != "" {
		args = append(args, "--timer-path", timerPath)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s run --replay: %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// withReplicas writes the experiment in file (YAML or JSON) with
// simulation.replicas set to n into a temporary file.
func withReplicas(file string, n int) (string, func(), error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", nil, err
	}
	var exp v1alpha1.SchedExperiment
	if err := yaml.UnmarshalStrict(b, &exp); err != nil {
		return "", nil, fmt.Errorf("%s: %w", file, err)
	}
	if exp.Spec.Simulation == nil {
		exp.Spec.Simulation = &v1alpha1.Simulation{}
	}
	r := int32(n)
	exp.Spec.Simulation.Replicas = &r
	return writeTemp("experiment-*.json", &exp)
}

// parseHostPauses reads -host-pauses: PER_HOUR:P5,P25,P50,P75,P90,P95,P99.
func parseHostPauses(v string) (*v1alpha1.NodeConstants, error) {
	rate, qs, ok := strings.Cut(v, ":")
	if !ok {
		return nil, fmt.Errorf("want PER_HOUR:P5,P25,P50,P75,P90,P95,P99")
	}
	k := &v1alpha1.NodeConstants{}
	if _, err := fmt.Sscan(rate, &k.HostPausesPerHour); err != nil || k.HostPausesPerHour <= 0 {
		return nil, fmt.Errorf("pauses per hour %q: want a positive integer", rate)
	}
	for _, q := range strings.Split(qs, ",") {
		var n int64
		if _, err := fmt.Sscan(q, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("pause length %q: want a positive integer (ns)", q)
		}
		if l := len(k.HostPauseQuantilesNs); l > 0 && n < k.HostPauseQuantilesNs[l-1] {
			return nil, fmt.Errorf("pause lengths must not decrease (%d after %d)", n, k.HostPauseQuantilesNs[l-1])
		}
		k.HostPauseQuantilesNs = append(k.HostPauseQuantilesNs, n)
	}
	if len(k.HostPauseQuantilesNs) != 7 {
		return nil, fmt.Errorf("%d pause lengths; want 7 (levels 5, 25, 50, 75, 90, 95, 99 %%)", len(k.HostPauseQuantilesNs))
	}
	return k, nil
}

// withHostPauses writes a copy of the run status at path whose calibration
// window has the host pauses of k, and returns its name.
func withHostPauses(path string, k *v1alpha1.NodeConstants) (string, func(), error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	var st v1alpha1.NodeRunStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.Calibration == nil {
		return "", nil, fmt.Errorf("%s: no calibration window to add host pauses to", path)
	}
	st.Calibration.Constants.HostPausesPerHour = k.HostPausesPerHour
	st.Calibration.Constants.HostPauseQuantilesNs = k.HostPauseQuantilesNs
	return writeTemp("noderun-*.json", &st)
}

// writeTemp writes v as JSON into a new temporary file named after
// pattern, and returns its name and how to remove it.
func writeTemp(pattern string, v any) (string, func(), error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	clean := func() { os.Remove(f.Name()) }
	if _, err := f.Write(b); err != nil {
		f.Close()
		clean()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		clean()
		return "", nil, err
	}
	return f.Name(), clean, nil
}
