package main

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// -replicas rewrites only simulation.replicas of the run's experiment.
func TestWithReplicas(t *testing.T) {
	// base-slice has a simulation section, custom-slice none.
	for _, s := range []string{"base-slice.yaml", "custom-slice.yaml"} {
		t.Run(s, func(t *testing.T) { testWithReplicas(t, filepath.Join("..", "..", "config", "samples", s)) })
	}
}

func testWithReplicas(t *testing.T, src string) {
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var want v1alpha1.SchedExperiment
	if err := yaml.UnmarshalStrict(orig, &want); err != nil {
		t.Fatal(err)
	}
	name, clean, err := withReplicas(src, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer clean()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.SchedExperiment
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Simulation == nil || got.Spec.Simulation.Replicas == nil || *got.Spec.Simulation.Replicas != 32 {
		t.Fatalf("replicas %+v, want 32", got.Spec.Simulation)
	}
	got.Spec.Simulation.Replicas = nil
	if want.Spec.Simulation == nil {
		if b, _ := yaml.Marshal(got.Spec.Simulation); string(b) != "{}\n" {
			t.Errorf("a simulation section added with more than replicas: %s", b)
		}
		got.Spec.Simulation = nil
	} else {
		got.Spec.Simulation.Replicas = want.Spec.Simulation.Replicas
	}
	gb, _ := yaml.Marshal(&got)
	wb, _ := yaml.Marshal(&want)
	if string(gb) != string(wb) {
		t.Errorf("the rewritten experiment differs beyond replicas:\n%s\nwant\n%s", gb, wb)
	}
	clean()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("the temporary file is still there: %v", err)
	}
}
