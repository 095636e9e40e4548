package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// chartsReport is a report with three variants of two groups: CPU measured
// with a spread over five windows next to the prediction, and a latency
// group with percentiles.
func chartsReport() *experiment.Report {
	lat := func(p50, p99 float64) *v1alpha1.LatencySummary {
		return &v1alpha1.LatencySummary{P50: p50, P90: 2 * p50, P99: p99, P999: 2 * p99, Max: 4 * p99, Count: 20000}
	}
	rep := &experiment.Report{}
	for i, v := range []string{"stock", "autogroup-off", "base-slice-1ms"} {
		f := float64(i)
		rep.Variants = append(rep.Variants, experiment.VariantReport{
			Name: v,
			Node: experiment.NodeReport{CPUs: 2, Scheduler: "EEVDF"},
			Groups: []experiment.GroupReport{{
				Name: "batch", Tasks: 4,
				Measured: &v1alpha1.MeasuredMetrics{
					Metrics: v1alpha1.Metrics{CPU: 1.2 + 0.1*f}, N: 5,
					Stddev: &v1alpha1.Metrics{CPU: 0.05 + 0.02*f},
				},
				Predicted: &v1alpha1.Metrics{CPU: 1.25 + 0.05*f},
			}, {
				Name: "video", Tasks: 2,
				Measured: &v1alpha1.MeasuredMetrics{
					Metrics: v1alpha1.Metrics{CPU: 0.5 - 0.05*f, WakeupLatencyUs: lat(60+10*f, 900-200*f)}, N: 5,
					Stddev: &v1alpha1.Metrics{CPU: 0.03, WakeupLatencyUs: lat(5, 150)},
				},
				Predicted: &v1alpha1.Metrics{CPU: 0.55 - 0.05*f, WakeupLatencyUs: lat(55+10*f, 800-150*f)},
			}},
		})
	}
	return rep
}

// TestReportCharts writes every report chart for objectives on CPU and on
// latency and checks each is a PNG at least 1200 px wide with its SVG. Set
// SCHEDLAB_CHART_DIR to keep them and look at them.
func TestReportCharts(t *testing.T) {
	dir := os.Getenv("SCHEDLAB_CHART_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	spec := &v1alpha1.SchedExperimentSpec{Objectives: []v1alpha1.Objective{
		{Metric: "cpu", Group: "batch"},
		{Metric: "wakeupLatencyUs.p99", Group: "video"},
	}}
	charts, err := writeReportCharts(dir, spec, chartsReport())
	if err != nil {
		t.Fatal(err)
	}
	// No objectives: CPU of every group, and the latency charts.
	all, err := writeReportCharts(filepath.Join(dir, "all"), &v1alpha1.SchedExperimentSpec{}, chartsReport())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"cpu-batch": true, "latency-ccdf-video": true, "latency-percentiles-video": true}
	got := map[string]bool{}
	for _, c := range charts {
		got[c.Name] = true
	}
	for n := range want {
		if !got[n] {
			t.Errorf("no chart %s among %v", n, charts)
		}
	}
	if len(charts) != len(want) {
		t.Errorf("charts %v, want exactly %v", charts, want)
	}
	for _, c := range all {
		charts = append(charts, chartFile{Name: filepath.Join("all", c.Name)})
	}
	for _, c := range charts {
		f, err := os.Open(filepath.Join(dir, c.Name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", c.Name, err)
		}
		if cfg.Width < 1200 || cfg.Height < 600 {
			t.Errorf("%s.png is %d×%d px, want at least 1200×600", c.Name, cfg.Width, cfg.Height)
		}
		if fi, err := os.Stat(filepath.Join(dir, c.Name+".svg")); err != nil || fi.Size() == 0 {
			t.Errorf("%s.svg: %v", c.Name, err)
		}
	}
}
