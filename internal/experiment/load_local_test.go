package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest without the fields that pick a cluster's nodes is refused for
// a cluster (as the API server refuses it) and accepted for local use, in
// both modes.
func TestLoadLocalNeedsNoClusterFields(t *testing.T) {
	for mode, want := range map[string]string{
		"Measure":  "mode Measure needs a nodeSelector",
		"Simulate": "mode Simulate needs either a nodeSelector",
	} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.yaml")
			manifest := `apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: local}
spec:
  mode: ` + mode + `
  duration: 2s
  variants: [{name: stock}]
  workload:
    groups:
    - {name: a, tasks: 2, pattern: {type: Hog}}
`
			if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load: %v, want an error with %q", err, want)
			}
			exp, err := LoadLocal(path)
			if err != nil {
				t.Fatalf("LoadLocal: %v", err)
			}
			if exp.Spec.NodeSelector != nil || string(exp.Spec.Mode) != mode {
				t.Errorf("LoadLocal: %+v", exp.Spec)
			}
		})
	}
	// Everything else is still checked.
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: schedlab.io/v1alpha1\nkind: SchedExperiment\nmetadata: {name: bad}\nspec:\n  duration: 1h1m\n  variants: [{name: stock}]\n  workload: {groups: [{name: a, pattern: {type: Hog}}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLocal(path); err == nil || !strings.Contains(err.Error(), "spec.duration") {
		t.Errorf("LoadLocal of a too long duration: %v", err)
	}
}
