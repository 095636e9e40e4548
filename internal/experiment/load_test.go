package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func repoPath(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join("..", "..", rel)
}

// Every sample must load: they are the manifests users copy first; and
// so must the scenarios the simulator's VALIDATION.md was measured with.
func TestSamplesLoad(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "config/samples/*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("expected at least 8 samples, found %d (%v)", len(files), err)
	}
	// The simulator's validation scenarios that are not samples.
	scenarios, err := filepath.Glob(repoPath(t, "internal/simengine/testdata/validation/*.yaml"))
	if err != nil || len(scenarios) < 3 {
		t.Fatalf("expected at least 3 validation scenarios, found %d (%v)", len(scenarios), err)
	}
	for _, f := range append(files, scenarios...) {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// ExpectedError reads the "# expect: message" header of an invalid
// manifest; the same files and messages drive test/crd, which also runs them
// through the API server.
func ExpectedError(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "# expect: "); ok {
			return rest
		}
	}
	t.Fatalf("%s has no '# expect:' line", path)
	return ""
}

// Each invalid manifest is refused locally with the advice its header names.
func TestInvalidManifestsRefused(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "test/manifests/invalid/*.yaml"))
	if err != nil || len(files) < 25 {
		t.Fatalf("expected at least 25 invalid manifests, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := ExpectedError(t, f)
			_, err := Load(f)
			if strings.HasPrefix(filepath.Base(f), "profile-") {
				_, err = LoadProfile(f)
			}
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
		})
	}
}

// YAML 1.1 reads an unquoted y as a boolean. kubectl sends it as one and the
// API server refuses it where a string belongs; the CLI must do the same
// rather than quietly calling the group "true".
func TestYAMLBooleanWhereAStringBelongs(t *testing.T) {
	manifest := func(name string) []byte {
		return []byte(`apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: yaml-bool}
spec:
  mode: Simulate
  duration: 2s
  variants: [{name: stock}]
  workload:
    groups: [{name: ` + name + `, pattern: {type: Hog}}]
  simulation: {nodes: [{cpus: 2}]}
`)
	}
	for _, name := range []string{"y", "n", "yes", "Off", "TRUE"} {
		_, err := Parse(manifest(name))
		if err == nil {
			t.Errorf("group name %s accepted", name)
			continue
		}
		for _, want := range []string{"spec.workload.groups[0].name (line 9)", "boolean", "must be of type string"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("group name %s: error %q does not contain %q", name, err, want)
			}
		}
	}
	exp, err := Parse(manifest(`"y"`))
	if err != nil {
		t.Fatalf("quoted name refused: %v", err)
	}
	if got := exp.Spec.Workload.Groups[0].Name; got != "y" {
		t.Errorf("group name %q, want y", got)
	}
}

// A negative duration where the bound is "at most" is refused as negative,
// not as too long ("timerSlack must be at most 100ms" for -50us misled).
func TestNegativeDurationRefusedAsNegative(t *testing.T) {
	_, err := Parse([]byte(`apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: negative-slack}
spec:
  mode: Simulate
  duration: 2s
  variants: [{name: stock}]
  workload:
    groups: [{name: probe, timerSlack: -50us, pattern: {type: LatencyProbe, interval: 1ms}}]
  simulation: {nodes: [{cpus: 2}]}
`))
	want := "timerSlack must not be negative: write a duration from 0 to 100ms"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v; want one containing %q", err, want)
	}
}
