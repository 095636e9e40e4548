package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// testdata/weights-noderun.json is the noderun.json a run of the weights
// sample wrote on a 2-CPU 6.18 node: --replay predicts it again without
// root and without measuring, and shows the stored measurements.
func TestRunReplay(t *testing.T) {
	sample := filepath.Join("..", "..", "config", "samples", "weights-100-200-400.yaml")
	stored := filepath.Join("testdata", "weights-noderun.json")
	st, err := loadNodeRun(stored, &mustLoad(t, sample).Spec)
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "run", "--replay", stored, "-f", sample, "-o", "json")
	if r.code != 0 {
		t.Fatalf("replay failed: %v", r)
	}
	var rep experiment.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rep.Variants) != 1 || len(rep.Variants[0].Groups) != 3 {
		t.Fatalf("want one variant of three groups: %s", r.stdout)
	}
	for _, g := range rep.Variants[0].Groups {
		var sum float64
		n := 0
		for _, w := range st.Windows {
			for _, wg := range w.Groups {
				if wg.Name == g.Name {
					sum += wg.Metrics.CPU
					n++
				}
			}
		}
		if g.Measured == nil || g.Predicted == nil || n == 0 {
			t.Fatalf("%s: measured %v, predicted %v, %d stored windows", g.Name, g.Measured, g.Predicted, n)
		}
		if m := sum / float64(n); math.Abs(g.Measured.CPU-m) > 1e-9 {
			t.Errorf("%s: measured %.4f, the stored windows' mean is %.4f", g.Name, g.Measured.CPU, m)
		}
		// The stored run's predictions (weights 1:2:4 on 2 CPUs, 2.0 %
		// of the CPUs taken by others): 0.330, 0.659, 0.988.
		if g.Predicted.CPU < 0.3 || g.Predicted.CPU > 1.01 {
			t.Errorf("%s: predicted %.3f CPU", g.Name, g.Predicted.CPU)
		}
	}
	if !strings.Contains(r.stderr, "calibration window: timer") {
		t.Errorf("the stored calibration window is not shown:\n%s", r.stderr)
	}

	// A status of another experiment is refused, naming the flag.
	other := writeFile(t, "other.yaml", strings.Replace(string(mustRead(t, sample)), "name: stock", "name: tuned", 1))
	r = runCLI(t, "run", "--replay", stored, "-f", other)
	if r.code == 0 || !strings.Contains(r.stderr, "--replay") || !strings.Contains(r.stderr, `"stock"`) {
		t.Errorf("replay against another experiment: %v", r)
	}
	if _, err := loadNodeRun(writeFile(t, "empty.json", "{}"), &mustLoad(t, sample).Spec); err == nil {
		t.Error("an empty status was accepted")
	}
}

func mustLoad(t *testing.T, file string) *v1alpha1.SchedExperiment {
	t.Helper()
	exp, err := loadExperiment(&manifestFlag{file: file}, nil, "to replay")
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A replayed run whose windows measured host pauses is predicted with them,
// and says so; a run whose windows ran no Hog says that nothing was
// observed.
func TestRunReplayHostPauses(t *testing.T) {
	sample := filepath.Join("..", "..", "config", "samples", "weights-100-200-400.yaml")
	stored := filepath.Join("testdata", "weights-noderun.json")
	r := runCLI(t, "run", "--replay", stored, "-f", sample, "-o", "json")
	if r.code != 0 {
		t.Fatalf("replay failed: %v", r)
	}
	if !strings.Contains(r.stderr, "host pauses: not observed") {
		t.Errorf("a run without pause figures does not say nothing was observed:\n%s", r.stderr)
	}

	var st v1alpha1.NodeRunStatus
	if err := json.Unmarshal(mustRead(t, stored), &st); err != nil {
		t.Fatal(err)
	}
	for i := range st.Windows {
		st.Windows[i].HostPauses = &v1alpha1.HostPauseMeasurement{Hogs: 3, ObservedNs: 4e9, Count: 1, LengthsNs: []int64{12e6 + int64(i)*1e6}, QuantilesNs: []int64{12e6, 12e6, 12e6, 12e6, 12e6, 12e6, 12e6}}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	withPauses := writeFile(t, "noderun.json", string(b))
	r = runCLI(t, "run", "--replay", withPauses, "-f", sample, "-o", "json")
	if r.code != 0 {
		t.Fatalf("replay failed: %v", r)
	}
	var rep experiment.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	n := len(st.Windows)
	hp := rep.HostPauses
	if hp == nil || hp.Prediction != experiment.PausesMeasured || hp.Count != int64(n) || hp.ObservedNs != int64(n)*4e9 || math.Abs(hp.PerHour-900) > 1e-6 {
		t.Fatalf("report's host pauses %+v, want %d in %d × 4 s (900 per hour), used by the prediction", hp, n, n)
	}
	if !strings.Contains(r.stderr, "900 per hour") || !strings.Contains(r.stderr, "predictions use them") {
		t.Errorf("the pauses the prediction uses are not shown:\n%s", r.stderr)
	}
}

// A replayed run whose windows recorded other top-level cgroups shows them
// per window and runs them beside the workload, saying so.
func TestRunReplayForeignCgroups(t *testing.T) {
	sample := filepath.Join("..", "..", "config", "samples", "weights-100-200-400.yaml")
	var st v1alpha1.NodeRunStatus
	if err := json.Unmarshal(mustRead(t, filepath.Join("testdata", "weights-noderun.json")), &st); err != nil {
		t.Fatal(err)
	}
	for i := range st.Windows {
		st.Windows[i].ForeignCgroups = []v1alpha1.ForeignCgroup{{Path: "/spin", Shares: 3, Idle: true, CPU: 0.004, CPUSource: "Threads",
			Threads: 2, Runnable: 2, Wait: 1.996}}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "run", "--replay", writeFile(t, "noderun.json", string(b)), "-f", sample, "-o", "json")
	if r.code != 0 {
		t.Fatalf("replay failed: %v", r)
	}
	for _, want := range []string{
		"other top-level cgroups: /spin (cpu.idle) 0.0040 CPUs (its threads'), 2.00 threads runnable (2.00 waiting) of 2",
		"predictions run the other threads of 1 top-level cgroups as 2 tasks in them",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// A noderun.json replayed against another experiment whose variant names
// happen to match (both have "stock") is refused: its groups are not the
// experiment's, and the replay would print predictions beside no measurement.
func TestRunReplayRefusesOtherGroups(t *testing.T) {
	other := filepath.Join("..", "..", "config", "samples", "group-fairness.yaml")
	stored := filepath.Join("testdata", "weights-noderun.json")
	_, err := loadNodeRun(stored, &mustLoad(t, other).Spec)
	if err == nil || !strings.Contains(err.Error(), "measured group") {
		t.Fatalf("loadNodeRun = %v, want a refusal naming a measured group the experiment lacks", err)
	}
}
