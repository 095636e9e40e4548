package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// A calibration stored under a shape's older name is not used (it does not
// say which kernel it came from), and an event says how to store it anew.
// A shape whose name is the old form finds its calibration as before.
func TestCalibrationUnderOldNameWarns(t *testing.T) {
	data, err := experiment.CalibrationConfigMapData(v1alpha1.ShapeCalibration{Shape: "2cpu-EEVDF"})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "schedlab-system", Name: experiment.CalibrationConfigMapName("2cpu-EEVDF")}, Data: data}
	f := newFixture(t, interceptor.Funcs{}, cm)
	s := &scope{}
	named := v1alpha1.NodeShape{CPUs: 2, Kernel: "6.18.44", HZ: 250, Preempt: v1alpha1.PreemptNone}
	cals, err := f.r.calibrations(context.Background(), s, []v1alpha1.NodeShape{named, {CPUs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cals) != 1 || cals[0].Shape != "2cpu-EEVDF" {
		t.Errorf("calibrations %+v, want the one of 2cpu-EEVDF alone", cals)
	}
	var warned []string
	for _, ev := range s.events {
		if ev.reason == "CalibrationUnderOldName" {
			warned = append(warned, ev.note)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "Shape "+named.Name()+" is predicted uncalibrated") || !strings.Contains(warned[0], "older name 2cpu-EEVDF") {
		t.Errorf("events %q, want one warning for %s", warned, named.Name())
	}
}
