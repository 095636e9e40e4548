package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Report is what `schedlab simulate` and `schedlab run` print: per variant
// (and node shape), per group, predicted and, after a run, measured.
type Report struct {
	Capabilities *v1alpha1.NodeCapabilities `json:"capabilities,omitempty"`
	Variants     []VariantReport            `json:"variants"`
	BestVariant  string                     `json:"bestVariant,omitempty"`
	BestReason   string                     `json:"bestVariantReason,omitempty"`
	PredError    string                     `json:"predictionError,omitempty"`
	// Experiment and Spec say what was run, so that `schedlab promote` can
	// turn a local run's winner into a SchedProfile.
	Experiment string                        `json:"experiment,omitempty"`
	Spec       *v1alpha1.SchedExperimentSpec `json:"spec,omitempty"`
	// Recommendation is the significantly better variant, if any.
	Recommendation *v1alpha1.Recommendation `json:"recommendation,omitempty"`
	// HostPauses is what a measured run saw of its node's host pauses and
	// what its predictions used; absent for predictions alone.
	HostPauses *HostPauses `json:"hostPauses,omitempty"`
	// VCPUStalls is what it saw of the stalls of one vCPU and what the
	// prediction did with them.
	VCPUStalls *VCPUStalls `json:"vcpuStalls,omitempty"`
}

// NodeReport is the node shape a variant's predictions are for.
type NodeReport struct {
	CPUs      int32  `json:"cpus"`
	Scheduler string `json:"scheduler"`
	// Kernel is the shape's kernel release; absent for the simulator's
	// reference kernel.
	Kernel         string `json:"kernel,omitempty"`
	HZ             int32  `json:"hz,omitempty"`
	Preempt        string `json:"preempt,omitempty"`
	TunableScaling string `json:"tunableScaling,omitempty"`
	// Topology is the shape's CPU topology; absent when flat.
	Topology *v1alpha1.NodeTopology `json:"topology,omitempty"`
}

// VariantReport is one variant on one node shape.
type VariantReport struct {
	Name        string        `json:"name"`
	Node        NodeReport    `json:"node"`
	Unsupported string        `json:"unsupported,omitempty"`
	Groups      []GroupReport `json:"groups"`
}

// GroupReport is one group's numbers.
type GroupReport struct {
	Name      string                    `json:"name"`
	Tasks     int                       `json:"tasks"`
	Measured  *v1alpha1.MeasuredMetrics `json:"measured,omitempty"`
	Predicted *v1alpha1.Metrics         `json:"predicted,omitempty"`
	// PredictedLow and PredictedHigh bound the 95% interval of each
	// predicted metric over the simulator's seeds (simulation.replicas).
	PredictedLow  *v1alpha1.Metrics `json:"predictedLow,omitempty"`
	PredictedHigh *v1alpha1.Metrics `json:"predictedHigh,omitempty"`
	RelativeError *v1alpha1.Metrics `json:"relativeError,omitempty"`
}

// Name is the node shape's name (NodeShape.Name).
func (n NodeReport) Name() string { return n.Shape().Name() }

// Shape is the node shape the report names, every field its name is made of.
func (n NodeReport) Shape() v1alpha1.NodeShape {
	return v1alpha1.NodeShape{CPUs: n.CPUs, Scheduler: v1alpha1.SchedulerFamily(n.Scheduler), Kernel: n.Kernel, HZ: n.HZ,
		Preempt: v1alpha1.PreemptModel(n.Preempt), TunableScaling: v1alpha1.TunableScaling(n.TunableScaling), Topology: n.Topology.DeepCopy()}
}

func nodeReport(n v1alpha1.NodeShape) NodeReport {
	r := NodeReport{CPUs: n.CPUs, Scheduler: orDefault(string(n.Scheduler), "EEVDF"), Kernel: n.Kernel, HZ: n.HZ,
		Preempt: string(n.Preempt), TunableScaling: string(n.TunableScaling)}
	if !n.Topology.IsFlat() {
		r.Topology = n.Topology.DeepCopy()
	}
	return r
}

// SimulationReport lays predictions out variant by variant, shape by shape.
func SimulationReport(spec *v1alpha1.SchedExperimentSpec, preds []Prediction) *Report {
	r := &Report{}
	idx := map[string]int{}
	// The rows the best variant is chosen on, as the controller's Simulate
	// mode chooses it: a prediction wins only if its interval over the
	// seeds is apart from the others'; each shape is a separate question.
	results := make([]v1alpha1.GroupResult, 0, len(preds))
	for k := range preds {
		p := &preds[k]
		key := p.Shape + "/" + p.Variant
		i, ok := idx[key]
		if !ok {
			i = len(r.Variants)
			idx[key] = i
			r.Variants = append(r.Variants, VariantReport{Name: p.Variant, Node: nodeReport(p.Node)})
		}
		row := PredictedResult(p)
		if p.Unsupported != "" {
			r.Variants[i].Unsupported = p.Unsupported
		} else {
			results = append(results, row)
		}
		r.Variants[i].Groups = append(r.Variants[i].Groups, GroupReport{Name: p.Group, Tasks: p.Tasks,
			Predicted: row.Predicted, PredictedLow: row.PredictedLow, PredictedHigh: row.PredictedHigh})
	}
	if len(spec.Objectives) > 0 {
		r.BestVariant, r.BestReason = BestPredictedVariant(spec, results)
	}
	return r
}

// MeasuredReport lays measured results (with their predictions filled in by
// Compare) out for one node.
func MeasuredReport(spec *v1alpha1.SchedExperimentSpec, node v1alpha1.NodeShape, caps *v1alpha1.NodeCapabilities, results []v1alpha1.GroupResult, predErr string) *Report {
	r := &Report{Capabilities: caps, PredError: predErr}
	tasks := map[string]int{}
	for _, g := range spec.Workload.Groups {
		tasks[g.Name] = int(g.ReplicaCount() * g.TaskCount())
	}
	idx := map[string]int{}
	for _, res := range results {
		i, ok := idx[res.Variant]
		if !ok {
			i = len(r.Variants)
			idx[res.Variant] = i
			r.Variants = append(r.Variants, VariantReport{Name: res.Variant, Node: nodeReport(node)})
		}
		if res.Unsupported != "" {
			r.Variants[i].Unsupported = res.Unsupported
		}
		r.Variants[i].Groups = append(r.Variants[i].Groups, GroupReport{
			Name: res.Group, Tasks: tasks[res.Group],
			Measured: res.Measured, Predicted: res.Predicted, RelativeError: res.RelativeError,
		})
	}
	r.BestVariant, r.BestReason = BestVariant(spec, results)
	r.Spec = spec.DeepCopy()
	r.Recommendation = Recommend(spec, results, r.BestVariant, 0)
	return r
}

// Results rebuilds the measured results of a report, for the measured rows
// (one node, no shape).
func (r *Report) Results() []v1alpha1.GroupResult {
	var out []v1alpha1.GroupResult
	for _, v := range r.Variants {
		for _, g := range v.Groups {
			out = append(out, v1alpha1.GroupResult{Variant: v.Name, Group: g.Name, Measured: g.Measured, Predicted: g.Predicted, Unsupported: v.Unsupported})
		}
	}
	return out
}

// WriteJSON prints the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable prints the report as aligned columns: measured next to
// predicted where both exist.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	measured := false
	for _, v := range r.Variants {
		for _, g := range v.Groups {
			if g.Measured != nil {
				measured = true
			}
		}
	}
	if measured {
		fmt.Fprintln(tw, "VARIANT\tGROUP\tTASKS\tCPU meas\tCPU pred\tERR\tSHARE meas\tSHARE pred\tP50us meas\tP50us pred\tP99us meas\tP99us pred\tMISS meas\tMISS pred\tN\t")
	} else {
		fmt.Fprintln(tw, "VARIANT\tNODE\tGROUP\tTASKS\tCPU\tCPU/TASK\tSHARE\tP50us\tP99us\tMAXus\tCSW/s vol\tCSW/s inv\tMISS\tOPS/s\t")
	}
	var unsupported []string
	for _, v := range r.Variants {
		if v.Unsupported != "" {
			fmt.Fprintf(tw, "%s\t%s\tunsupported*\t\t\t\t\t\t\t\t\t\t\t\t\t\n", v.Name, v.Node.Name())
			unsupported = append(unsupported, fmt.Sprintf("* %s on %s is unsupported: %s", v.Name, v.Node.Name(), v.Unsupported))
			continue
		}
		for _, g := range v.Groups {
			if measured {
				var mm *v1alpha1.Metrics
				n := int32(0)
				if g.Measured != nil {
					mm = &g.Measured.Metrics
					n = g.Measured.N
				}
				errCPU := "-"
				if g.RelativeError != nil && mm != nil && mm.CPU != 0 {
					errCPU = fmt.Sprintf("%+.1f%%", 100*g.RelativeError.CPU)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", v.Name, g.Name, g.Tasks,
					num(mm, "cpu", 3), num(g.Predicted, "cpu", 3), errCPU,
					num(mm, "share", 3), num(g.Predicted, "share", 3),
					num(mm, "wakeupLatencyUs.p50", 1), num(g.Predicted, "wakeupLatencyUs.p50", 1),
					num(mm, "wakeupLatencyUs.p99", 1), num(g.Predicted, "wakeupLatencyUs.p99", 1),
					num(mm, "deadlineMissRatio", 3), num(g.Predicted, "deadlineMissRatio", 3), n)
				continue
			}
			p := g.Predicted
			node := v.Node.Name()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", v.Name, node, g.Name, g.Tasks,
				num(p, "cpu", 3), num(p, "cpuPerTask", 3), num(p, "share", 3),
				num(p, "wakeupLatencyUs.p50", 1), num(p, "wakeupLatencyUs.p99", 1), num(p, "wakeupLatencyUs.max", 1),
				num(p, "ctxSwitchesPerSec.voluntary", 0), num(p, "ctxSwitchesPerSec.involuntary", 0),
				num(p, "deadlineMissRatio", 3), num(p, "opsPerSec", 0))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeRequestTable(w, measured); err != nil {
		return err
	}
	foot := unsupported
	if r.PredError != "" {
		foot = append(foot, "prediction error (cpu, mean |relative|): "+r.PredError)
	}
	if r.BestVariant != "" {
		foot = append(foot, fmt.Sprintf("best variant: %s (%s)", r.BestVariant, r.BestReason))
	} else if r.BestReason != "" {
		foot = append(foot, "best variant: "+r.BestReason)
	}
	if len(foot) > 0 {
		_, err := fmt.Fprintln(w, "\n"+strings.Join(foot, "\n"))
		return err
	}
	return nil
}

// writeRequestTable prints the request metrics of Server groups (latency in
// µs from scheduled arrival to completion, completed and dropped requests
// per second, context switches per second), measured next to predicted
// when measured; nothing when no group serves requests.
func (r *Report) writeRequestTable(w io.Writer, measured bool) error {
	cols := []struct {
		name, metric string
		prec         int
	}{{"OFFERED/s", "offered", 1}, {"REQ/s", "throughput", 1}, {"DROP/s", "dropped", 1},
		{"P50us", "requestLatencyUs.p50", 0}, {"P95us", "requestLatencyUs.p95", 0}, {"P99us", "requestLatencyUs.p99", 0},
		{"P999us", "requestLatencyUs.p999", 0}, {"MAXus", "requestLatencyUs.max", 0},
		{"CSW/s vol", "ctxSwitchesPerSec.voluntary", 0}, {"CSW/s inv", "ctxSwitchesPerSec.involuntary", 0}}
	var rows [][]string
	for _, v := range r.Variants {
		for _, g := range v.Groups {
			var mm *v1alpha1.Metrics
			if g.Measured != nil {
				mm = &g.Measured.Metrics
			}
			if (mm == nil || mm.RequestLatencyUs == nil) && (g.Predicted == nil || g.Predicted.RequestLatencyUs == nil) {
				continue
			}
			row := []string{v.Name, g.Name}
			for _, c := range cols {
				if measured {
					row = append(row, num(mm, c.metric, c.prec))
				}
				row = append(row, num(g.Predicted, c.metric, c.prec))
			}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"VARIANT", "REQUESTS OF"}
	for _, c := range cols {
		if measured {
			head = append(head, c.name+" meas", c.name+" pred")
		} else {
			head = append(head, c.name)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

func num(m *v1alpha1.Metrics, name string, prec int) string {
	v, ok := MetricValue(m, name)
	if !ok || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}
