package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/schedlab/schedlab/internal/experiment"
)

// TestRunWeightsAgainstSimulator runs the weights-100-200-400 sample on this
// machine with `schedlab run` and checks that each group's measured CPU is
// within 0.05 CPU of the simulator's prediction for this machine's shape
// (0.1 when every attempt was noisy, and said so; skipped when the machine
// is too busy to measure anything).
func TestRunWeightsAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: measures CPU shares on this machine's kernel")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates cgroups")
	}
	src, err := os.ReadFile("../../config/samples/weights-100-200-400.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// One repetition of 4s keeps the test short.
	y := strings.Replace(strings.Replace(string(src), "duration: 8s", "duration: 4s", 1), "repetitions: 2", "repetitions: 1", 1)
	file := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	f := &runFlags{manifest: manifestFlag{file}, out: outputJSON, stateDir: t.TempDir(), outputDir: t.TempDir(), wait: 10 * time.Minute}
	if err := run(context.Background(), &out, &errOut, f, nil, logr.Discard()); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	t.Logf("stderr:\n%s", errOut.String())
	var rep experiment.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.outputDir, "cpu.png")); err != nil {
		t.Errorf("no chart: %v", err)
	}
	// A window still noisy after every attempt: the other processes' CPU
	// time may all have been taken from one group.
	tol := 0.05
	var noise float64
	noisy := false
	if i := strings.Index(errOut.String(), "noisy ("); i >= 0 {
		noisy = true
		fmt.Sscanf(errOut.String()[i+len("noisy ("):], "%f", &noise)
		tol += noise
	}
	var worst float64
	for _, v := range rep.Variants {
		for _, g := range v.Groups {
			if g.Measured == nil || g.Predicted == nil {
				t.Fatalf("%s/%s: measured %v predicted %v", v.Name, g.Name, g.Measured, g.Predicted)
			}
			d := g.Measured.CPU - g.Predicted.CPU
			t.Logf("%s/%s: measured %.3f CPU, predicted %.3f, difference %+.3f", v.Name, g.Name, g.Measured.CPU, g.Predicted.CPU, d)
			worst = max(worst, d, -d)
		}
	}
	if noise > 0.3 {
		t.Skipf("this machine is too busy to compare with the simulator: %.2f CPUs used by other processes in every attempt; worst difference %.3f CPU", noise, worst)
	}
	if worst > tol {
		t.Errorf("measured CPU differs from the prediction by up to %.3f CPU; want within %.2f", worst, tol)
	}
	if noisy {
		t.Logf("the machine was noisy (%.2f CPUs not ours): compared within %.2f CPU instead of 0.05", noise, tol)
	}
}

// TestRunRefusesBadInput: an unknown knob (strict decoding) and a sysctl
// outside the allowlist are refused with a clear error before anything is
// touched: no journal, no lock holder, autogroup and cgroups as they were.
func TestRunRefusesBadInput(t *testing.T) {
	cases := map[string]string{
		`knobs: {fooBar: "1"}`:                         `unknown field "fooBar"`,
		`knobs: {sysctls: {kernel.core_pattern: "x"}}`: "kernel.core_pattern",
		`knobs: {autogroup: Disabled, baseSlice: 5s}`:  "baseSlice",
	}
	for knobs, want := range cases {
		t.Run(want, func(t *testing.T) {
			y := `apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: bad}
spec:
  nodeSelector: {matchLabels: {a: b}}
  duration: 2s
  variants:
  - name: v
    ` + knobs + `
  workload:
    groups:
    - {name: g, pattern: {type: Hog}}
`
			file := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
			autogroup, _ := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
			state := t.TempDir()
			var out, errOut bytes.Buffer
			err := run(context.Background(), &out, &errOut, &runFlags{manifest: manifestFlag{file}, out: outputTable, stateDir: state}, nil, logr.Discard())
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("run = %v, want an error naming %s", err, want)
			}
			t.Logf("error: %v", err)
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Errorf("state directory written: %v", ents)
			}
			if now, _ := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled"); string(now) != string(autogroup) {
				t.Errorf("autogroup changed")
			}
		})
	}
}
