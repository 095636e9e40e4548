package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// schedlab plan on the request-latency capacity sample answers, per shape
// and variant, the largest rate whose p99 request latency (with its whole
// interval) stays under the constraint with nothing dropped, and below the
// server's CPU capacity; the next rate up breaks a constraint; the fleet
// total is the answers times the node counts.
func TestPlanWebCapacitySample(t *testing.T) {
	var out bytes.Buffer
	f := planFlags{out: outputJSON, seed: -1, quiet: true}
	f.manifest.file = "../../config/samples/web-capacity.yaml"
	if err := plan(context.Background(), &out, io.Discard, &f, nil); err != nil {
		t.Fatal(err)
	}
	var got PlanOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	sw := got.Sweep
	if sw == nil || len(sw.Shapes) != 4 || len(sw.Fleet) != 2 {
		t.Fatalf("want 2 shapes × 2 variants and 2 fleet answers:\n%s", out.String())
	}
	col := map[string]int{}
	for i, c := range sw.Columns {
		col[c] = i
	}
	p99, okP := col["web/requestLatencyUs.p99"]
	drop, okD := col["web/dropped"]
	if !okP || !okD {
		t.Fatalf("columns %v", sw.Columns)
	}
	totals := map[string]int64{}
	for _, sh := range sw.Shapes {
		a := sh.Answer
		if a == nil {
			t.Errorf("%s/%s: no answer", sh.Shape, sh.Variant)
			continue
		}
		rate := a.At[0]
		// 4 workers of 2 ms mean service on c CPUs: at most c/2 ms requests/s
		// whatever the scheduler.
		shape, err := v1alpha1.ParseShapeName(sh.Shape)
		if err != nil {
			t.Fatal(err)
		}
		cpus := int64(shape.CPUs)
		if cpus == 0 || rate >= cpus*500 {
			t.Errorf("%s/%s: answer %d requests/s is not below the CPU capacity %d/s", sh.Shape, sh.Variant, rate, cpus*500)
		}
		if a.High[p99] > 25000 || a.High[drop] > 0 || !a.OK {
			t.Errorf("%s/%s: answer %d/s has p99 %.0f (high %.0f) µs, dropped %.1f/s", sh.Shape, sh.Variant, rate, a.Values[p99], a.High[p99], a.Values[drop])
		}
		for i, p := range sh.Points {
			if p.At[0] == rate && i+1 < len(sh.Points) && sh.Points[i+1].OK {
				t.Errorf("%s/%s: the point after the answer (%d/s) meets the constraints", sh.Shape, sh.Variant, sh.Points[i+1].At[0])
			}
		}
		totals[sh.Variant] += rate * int64(sh.Count)
	}
	for _, fa := range sw.Fleet {
		if fa.Total != totals[fa.Variant] || fa.Nodes != 50 {
			t.Errorf("fleet %s: %d requests/s over %d nodes, want %d over 50", fa.Variant, fa.Total, fa.Nodes, totals[fa.Variant])
		}
	}
}
