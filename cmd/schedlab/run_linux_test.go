package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/nodeagent"
	"github.com/schedlab/schedlab/test/util"
)

// TestRunWeightsAgainstSimulator runs the weights-100-200-400 sample on this
// machine with `schedlab run` and checks that each group's measured CPU is
// within 0.05 CPU of the simulator's prediction for this machine's shape,
// less what other processes' CPU time can take from it (util.NoiseLoss:
// others' time comes out of the groups by their weights and adds to none),
// and that the groups not capped at one CPU split what they got by weight
// (util.SharedByWeight), however busy the machine.
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
	// The window's noise: printed when it was noisy in every attempt (the
	// last attempt's, which the report measured); otherwise it was at most
	// the noise threshold.
	if rep.Capabilities == nil || rep.Spec == nil {
		t.Fatalf("the report names no node capabilities or spec: %+v", rep)
	}
	cpus := float64(rep.Capabilities.CPUs)
	noise := nodeagent.DefaultNoiseThreshold(rep.Capabilities.CPUs)
	for _, l := range strings.Split(errOut.String(), "\n") {
		if _, after, ok := strings.Cut(l, ": noisy ("); ok && !strings.Contains(l, "run again") {
			if _, err := fmt.Sscanf(after, "%f", &noise); err != nil {
				t.Fatalf("noise in %q: %v", l, err)
			}
		}
	}
	var weights []float64
	group := map[string]int{}
	for i, g := range rep.Spec.Workload.Groups {
		weights, group[g.Name] = append(weights, float64(*g.CPUWeight)), i
	}
	loss := util.NoiseLoss(cpus, weights)
	const tol = 0.05
	for _, v := range rep.Variants {
		if len(v.Groups) != len(weights) {
			t.Fatalf("%s: %d groups, want %d", v.Name, len(v.Groups), len(weights))
		}
		got := make([]float64, len(weights))
		for _, g := range v.Groups {
			if g.Measured == nil || g.Predicted == nil {
				t.Fatalf("%s/%s: measured %v predicted %v", v.Name, g.Name, g.Measured, g.Predicted)
			}
			got[group[g.Name]] = g.Measured.CPU
		}
		// The groups not capped at one CPU split what they got together by
		// their weights, however much others took.
		split := util.SharedByWeight(cpus, weights, got)
		for _, g := range v.Groups {
			i := group[g.Name]
			if !math.IsNaN(split[i]) && math.Abs(g.Measured.CPU-split[i]) > tol {
				t.Errorf("%s/%s: measured %.3f CPU, want its weight's part %.3f ± %.2f of what the groups not capped at one CPU got together", v.Name, g.Name, g.Measured.CPU, split[i], tol)
			}
			lo, hi := g.Predicted.CPU-tol-noise*loss[i], g.Predicted.CPU+tol
			t.Logf("%s/%s: measured %.3f CPU, predicted %.3f, within %.3f..%.3f (noise %.2f)", v.Name, g.Name, g.Measured.CPU, g.Predicted.CPU, lo, hi, noise)
			if g.Measured.CPU < lo || g.Measured.CPU > hi {
				t.Errorf("%s/%s: measured %.3f CPU, predicted %.3f: want within %.3f..%.3f (others took %.2f CPUs, at most %.2f of each of it from this group)",
					v.Name, g.Name, g.Measured.CPU, g.Predicted.CPU, lo, hi, noise, loss[i])
			}
		}
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

// TestRunRefusesBadRunID: a --run-id that cannot name one cgroup directory
// (a path, ..) is a usage error before the manifest is read or the node's
// lock taken, not a failed repetition after the machine was probed.
func TestRunRefusesBadRunID(t *testing.T) {
	for _, id := range []string{"../../evil", "a/b", "..", "x y"} {
		t.Run(id, func(t *testing.T) {
			state := t.TempDir()
			var out, errOut bytes.Buffer
			f := &runFlags{manifest: manifestFlag{"../../config/samples/weights-100-200-400.yaml"}, out: outputTable, stateDir: state, runID: id}
			err := run(context.Background(), &out, &errOut, f, nil, logr.Discard())
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitInvalid || !strings.Contains(err.Error(), "--run-id") {
				t.Fatalf("run = %v, want a usage error (exit %d) naming --run-id", err, exitInvalid)
			}
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Errorf("state directory written: %v", ents)
			}
			if out.Len() != 0 {
				t.Errorf("printed a table: %q", out.String())
			}
		})
	}
}
