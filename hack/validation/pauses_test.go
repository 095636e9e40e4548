package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func TestParseHostPauses(t *testing.T) {
	k, err := parseHostPauses("450:6880000,9100000,12300000,16100000,19500000,21210000,22162000")
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.NodeConstants{HostPausesPerHour: 450,
		HostPauseQuantilesNs: []int64{6880000, 9100000, 12300000, 16100000, 19500000, 21210000, 22162000}}
	if d := cmp.Diff(want, k); d != "" {
		t.Errorf("parse (-want +got):\n%s", d)
	}
	for _, bad := range []string{"450", "0:1,2,3,4,5,6,7", "450:1,2,3", "450:1,2,3,4,5,6,5", "450:1,2,x,4,5,6,7"} {
		if _, err := parseHostPauses(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// withHostPauses keeps the run status and sets only the calibration
// window's pause fields.
func TestWithHostPauses(t *testing.T) {
	st := v1alpha1.NodeRunStatus{Phase: "Succeeded", Calibration: &v1alpha1.NodeCalibration{
		Constants: v1alpha1.NodeConstants{TimerExpiryNs: 32048}}}
	b, _ := json.Marshal(&st)
	path := filepath.Join(t.TempDir(), "noderun.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	k := &v1alpha1.NodeConstants{HostPausesPerHour: 100, HostPauseQuantilesNs: []int64{1, 2, 3, 4, 5, 6, 7}}
	out, clean, err := withHostPauses(path, k)
	if err != nil {
		t.Fatal(err)
	}
	defer clean()
	b, _ = os.ReadFile(out)
	var got v1alpha1.NodeRunStatus
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	st.Calibration.Constants.HostPausesPerHour, st.Calibration.Constants.HostPauseQuantilesNs = 100, []int64{1, 2, 3, 4, 5, 6, 7}
	if d := cmp.Diff(st, got); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if _, _, err := withHostPauses(filepath.Join(t.TempDir(), "none.json"), k); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: err %v", err)
	}
}
