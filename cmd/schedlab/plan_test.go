package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const planSpec = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: hogs-on-2}
spec:
  mode: Simulate
  duration: 1s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, pattern: {type: Burst, meanRun: 5ms, meanSleep: 1ms}}
  sweep:
    parameters: [{target: Replicas, group: hogs, range: {from: 1, to: 6}}]
  constraints: [{metric: cpuPerTask, group: hogs, min: 0.5}]
  simulation:
    seed: 1
    nodes: [{cpus: 2, count: 3}]
`

// schedlab plan prints the same JSON twice for the same seed, its table
// names the answer and the fleet, and --report writes plan.json and a chart.
func TestPlanCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte(planSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(f planFlags) string {
		var out bytes.Buffer
		f.manifest.file, f.seed, f.quiet = file, -1, true
		if err := plan(context.Background(), &out, io.Discard, &f, nil); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	a := run(planFlags{out: outputJSON, outputDir: filepath.Join(dir, "report")})
	if b := run(planFlags{out: outputJSON, workers: 1}); a != b {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
	var got PlanOutput
	if err := json.Unmarshal([]byte(a), &got); err != nil {
		t.Fatal(err)
	}
	if got.Sweep == nil || len(got.Sweep.Shapes) != 1 || len(got.Sweep.Fleet) != 1 || got.Sweep.Fleet[0].Nodes != 3 {
		t.Fatalf("plan output %s", a)
	}
	table := run(planFlags{out: outputTable})
	for _, want := range []string{"2cpu-EEVDF × 3, variant stock", "<- answer", "fleet, stock: ", "hogs/cpuPerTask ≥ 0.5"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	for _, f := range []string{"plan.json", "plan.md", "curve-1-hogs-cpuPerTask.png", "curve-1-hogs-cpuPerTask.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "report", f)); err != nil || st.Size() == 0 {
			t.Errorf("report %s: %v", f, err)
		}
	}
	var y bytes.Buffer
	if err := plan(context.Background(), &y, io.Discard, &planFlags{manifest: manifestFlag{file}, out: outputYAML, seed: -1}, nil); err != nil || !strings.Contains(y.String(), "experiment: hogs-on-2") {
		t.Errorf("-o yaml: %v\n%s", err, y.String())
	}
}

func TestParseShard(t *testing.T) {
	if i, n, err := parseShard("2/5"); err != nil || i != 2 || n != 5 {
		t.Errorf("2/5: %d %d %v", i, n, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "3")
	if i, n, err := parseShard("job/4"); err != nil || i != 3 || n != 4 {
		t.Errorf("job/4 with JOB_COMPLETION_INDEX=3: %d %d %v", i, n, err)
	}
	for _, bad := range []string{"5/5", "-1/3", "1", "a/b", "0/0", "job/3"} {
		if _, _, err := parseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// simulate --calibration: a calibration for the shape changes the
// prediction; a file that cannot be read is refused, naming the flag.
func TestSimulateCalibration(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte(planSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	sf := shapeFlags{seed: -1, calibration: filepath.Join(dir, "missing.yaml")}
	err := simulate(io.Discard, &manifestFlag{file}, nil, outputJSON, &sf)
	if err == nil || !strings.Contains(err.Error(), "--calibration") {
		t.Fatalf("missing calibration file: err %v, want one naming --calibration", err)
	}
}
