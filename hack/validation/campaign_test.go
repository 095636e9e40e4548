package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// storedCampaigns is where the repository keeps the measured campaigns
// that VALIDATION.md's current table is made from.
var storedCampaigns = filepath.Join("..", "..", "internal", "simengine", "testdata", "validation", "runs")

// TestStoredCampaigns: every run the repository keeps still reads into
// today's API with nothing left over (a field renamed or dropped since the
// run was measured would make the table's replay silently lose it), holds
// measured windows, and has the experiment it measured; every cyclictest
// run beside them parses. `make validation` replays them.
func TestStoredCampaigns(t *testing.T) {
	dirs, err := findRuns(storedCampaigns)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no stored runs under %s", storedCampaigns)
	}
	windows := 0
	for _, d := range dirs {
		dir := filepath.Join(storedCampaigns, d)
		b, err := os.ReadFile(filepath.Join(dir, "noderun.json"))
		if err != nil {
			t.Fatal(err)
		}
		var st v1alpha1.NodeRunStatus
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			t.Errorf("%s: noderun.json does not read into today's NodeRunStatus: %v", d, err)
			continue
		}
		ws := measuredWindows(&st)
		if len(ws) == 0 {
			t.Errorf("%s: no measured window", d)
		}
		windows += len(ws)
		y, err := os.ReadFile(filepath.Join(dir, "experiment.yaml"))
		if err != nil {
			t.Errorf("%s: %v (the replay needs the experiment the run measured)", d, err)
			continue
		}
		var exp v1alpha1.SchedExperiment
		if err := yaml.UnmarshalStrict(y, &exp); err != nil {
			t.Errorf("%s: experiment.yaml: %v", d, err)
		}
	}
	refs, err := findRefRuns(storedCampaigns)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) == 0 {
		t.Errorf("no cyclictest runs under %s: the table's reference rows need them", storedCampaigns)
	}
	t.Logf("%d runs, %d measured windows, %d cyclictest runs", len(dirs), windows, len(refs))
}
