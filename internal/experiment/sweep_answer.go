package experiment

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Plan runs a spec's sweep on the shapes and answers it: the curve per shape
// × variant, the answer per shape and over the fleet.
func Plan(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape, opts SweepOptions) (*v1alpha1.SweepStatus, error) {
	opts.Shard, opts.Shards = 0, 1
	sh, err := RunSweep(ctx, spec, shapes, opts)
	if err != nil {
		return nil, err
	}
	return MergeSweep(spec, shapes, []*SweepShard{sh})
}

// MergeSweep combines the shards of a sweep (all of them, any order) into
// the answer. It fails when a job is missing or the shards disagree.
func MergeSweep(spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape, shards []*SweepShard) (*v1alpha1.SweepStatus, error) {
	axes := SweepAxes(spec.Sweep)
	grid := SweepGrid(axes)
	cols := SweepColumns(spec)
	nv, np := len(spec.Variants), len(grid)
	total := len(shapes) * nv * np
	jobs := make([]*SweepJobResult, total)
	window := ""
	for _, sh := range shards {
		if sh.Jobs != total {
			return nil, fmt.Errorf("shard %d/%d has %d jobs, the spec %d: were the shards run on this spec and these node shapes?", sh.Shard, sh.Shards, sh.Jobs, total)
		}
		if len(sh.Columns) != len(cols) {
			return nil, fmt.Errorf("shard %d/%d has columns %v, the spec %d", sh.Shard, sh.Shards, sh.Columns, len(cols))
		}
		if window != "" && sh.Window != window {
			return nil, fmt.Errorf("shards simulated different windows (%s and %s)", window, sh.Window)
		}
		window = sh.Window
		for i := range sh.Results {
			r := &sh.Results[i]
			if r.Job < 0 || r.Job >= total {
				return nil, fmt.Errorf("shard %d/%d: job %d out of range", sh.Shard, sh.Shards, r.Job)
			}
			jobs[r.Job] = r
		}
	}
	var missing []int
	for k, j := range jobs {
		if j == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d of %d jobs missing (first: %d): merge every shard", len(missing), total, missing[0])
	}

	st := &v1alpha1.SweepStatus{SimulatedWindow: window}
	for _, a := range axes {
		st.Parameters = append(st.Parameters, a.Name)
	}
	for _, c := range cols {
		st.Columns = append(st.Columns, c.Name())
	}
	for si, shape := range shapes {
		for vi := range spec.Variants {
			res := v1alpha1.SweepShapeResult{Shape: ShapeName(shape), Variant: spec.Variants[vi].Name, Count: shapeCount(shape)}
			for pi := 0; pi < np; pi++ {
				j := jobs[(si*nv+vi)*np+pi]
				pt := v1alpha1.SweepPoint{At: j.At, Values: j.Values, Low: j.Low, High: j.High, Unsupported: j.Unsupported}
				pt.OK = j.Unsupported == "" && meetsConstraints(spec.Constraints, cols, pt, true) == ""
				res.Points = append(res.Points, pt)
			}
			answerShape(spec, axes, cols, &res)
			// The optimistic answer: every metric at the favourable end of
			// its interval. Together they are the answer's range.
			opt := res
			opt.Points = make([]v1alpha1.SweepPoint, len(res.Points))
			for i, p := range res.Points {
				p.OK = p.Unsupported == "" && meetsConstraints(spec.Constraints, cols, p, false) == ""
				opt.Points[i] = p
			}
			opt.Answer, opt.Reason = nil, ""
			answerShape(spec, axes, cols, &opt)
			res.OptimisticAnswer = opt.Answer
			st.Shapes = append(st.Shapes, res)
		}
	}
	st.Fleet = fleetAnswer(spec, axes, st.Shapes)
	return st, nil
}

func shapeCount(s v1alpha1.NodeShape) int32 {
	if s.Count == nil {
		return 1
	}
	return *s.Count
}

// meetsConstraints returns "" when the point meets every constraint, or the
// first constraint broken, e.g. "web/wakeupLatencyUs.p99 = 2113.4 > 2000".
// A point with an interval (low, high) meets a constraint only if its whole
// interval does (whole); otherwise (whole false) if the favourable end does.
func meetsConstraints(cs []v1alpha1.Constraint, cols []SweepColumn, p v1alpha1.SweepPoint, whole bool) string {
	for _, c := range cs {
		col := SweepColumn{c.Group, string(c.Metric)}
		v, lo, hi := 0.0, 0.0, 0.0
		for i, x := range cols {
			if x == col && i < len(p.Values) {
				v, lo, hi = p.Values[i], p.Values[i], p.Values[i]
				if i < len(p.Low) && i < len(p.High) {
					lo, hi = p.Low[i], p.High[i]
				}
			}
		}
		up, down := hi, lo // the ends a Max and a Min constraint test
		if !whole {
			up, down = lo, hi
		}
		interval := func(x float64) string {
			if lo == hi {
				return fmtNum(x)
			}
			return fmt.Sprintf("%s [%s, %s]", fmtNum(v), fmtNum(lo), fmtNum(hi))
		}
		if c.Max != nil && up > *c.Max {
			return fmt.Sprintf("%s = %s > %s", col.Name(), interval(v), fmtNum(*c.Max))
		}
		if c.Min != nil && down < *c.Min {
			return fmt.Sprintf("%s = %s < %s", col.Name(), interval(v), fmtNum(*c.Min))
		}
	}
	return ""
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 5, 64) }

// ConstraintText renders a constraint, e.g. "web/wakeupLatencyUs.p99 ≤ 2000".
func ConstraintText(c v1alpha1.Constraint) string {
	name := c.Group + "/" + string(c.Metric)
	switch {
	case c.Min != nil && c.Max != nil:
		return fmt.Sprintf("%s ≤ %s ≤ %s", fmtNum(*c.Min), name, fmtNum(*c.Max))
	case c.Max != nil:
		return fmt.Sprintf("%s ≤ %s", name, fmtNum(*c.Max))
	case c.Min != nil:
		return fmt.Sprintf("%s ≥ %s", name, fmtNum(*c.Min))
	}
	return name
}

// answerShape picks the answer of one shape × variant curve.
//
// Largest walks the first parameter upwards (for each value of the second
// parameter, if any) and stops at the first point that breaks a
// constraint: the answer is the point before it. A later point that happens
// to pass again is not trusted: capacity is what holds all the way up.
// With two parameters the answer is the walk that got furthest (the first
// such value of the second parameter on a tie). Smallest walks downwards.
// Best takes the point that meets every constraint and is best by the
// objectives, in order; ties go to the earlier point.
func answerShape(spec *v1alpha1.SchedExperimentSpec, axes []SweepAxis, cols []SweepColumn, res *v1alpha1.SweepShapeResult) {
	kind := v1alpha1.SweepLargest
	if spec.Sweep != nil && spec.Sweep.Answer != "" {
		kind = spec.Sweep.Answer
	}
	pts := res.Points
	if len(pts) == 0 || len(axes) == 0 {
		return
	}
	if kind == v1alpha1.SweepBest {
		best := -1
		for i := range pts {
			if pts[i].OK && (best < 0 || betterByObjectives(spec.Objectives, cols, pts[i].Values, pts[best].Values)) {
				best = i
			}
		}
		if best < 0 {
			res.Reason = "no point meets every constraint: " + firstBreak(spec, cols, pts[0])
			return
		}
		a := pts[best]
		res.Answer = &a
		res.Reason = "best by the objectives among the points that meet every constraint"
		return
	}
	// Group the points into walks along the first parameter.
	n0 := len(axes[0].Values)
	walks := len(pts) / n0
	stride := walks // the first axis varies slowest
	bestIdx := -1
	var bestBreak string
	for w := 0; w < walks; w++ {
		last := -1
		brk := ""
		for s := 0; s < n0; s++ {
			i := s
			if kind == v1alpha1.SweepSmallest {
				i = n0 - 1 - s
			}
			p := pts[i*stride+w]
			if !p.OK {
				brk = fmt.Sprintf("%s=%d breaks %s", axes[0].Name, p.At[0], firstBreak(spec, cols, p))
				break
			}
			last = i
		}
		if last < 0 {
			if bestIdx < 0 && bestBreak == "" {
				bestBreak = brk
			}
			continue
		}
		better := bestIdx < 0 ||
			(kind == v1alpha1.SweepLargest && last > bestWalkPos(bestIdx, stride)) ||
			(kind == v1alpha1.SweepSmallest && last < bestWalkPos(bestIdx, stride))
		if better {
			bestIdx, bestBreak = last*stride+w, brk
		}
	}
	if bestIdx < 0 {
		res.Reason = "no point meets every constraint: " + bestBreak
		return
	}
	a := pts[bestIdx]
	res.Answer = &a
	if bestBreak == "" {
		edge := "up to the sweep's upper"
		if kind == v1alpha1.SweepSmallest {
			edge = "down to the sweep's lower"
		}
		res.Reason = fmt.Sprintf("every point %s end meets the constraints: extend the range to find the limit", edge)
	} else {
		res.Reason = bestBreak
	}
}

func bestWalkPos(idx, stride int) int { return idx / stride }

// firstBreak explains why a point fails.
func firstBreak(spec *v1alpha1.SchedExperimentSpec, cols []SweepColumn, p v1alpha1.SweepPoint) string {
	if p.Unsupported != "" {
		return "unsupported: " + p.Unsupported
	}
	return meetsConstraints(spec.Constraints, cols, p, true)
}

// betterByObjectives reports whether a beats b by the objectives in order.
func betterByObjectives(objs []v1alpha1.Objective, cols []SweepColumn, a, b []float64) bool {
	for _, o := range objs {
		i := -1
		for ci, c := range cols {
			if c.Group == o.Group && c.Metric == string(o.Metric) {
				i = ci
			}
		}
		if i < 0 || i >= len(a) || i >= len(b) || a[i] == b[i] {
			continue
		}
		if o.Goal == v1alpha1.Maximize {
			return a[i] > b[i]
		}
		return a[i] < b[i]
	}
	return false
}

// fleetAnswer sums each variant's answer over the shapes, each times its
// count, when the first parameter counts something per node (replicas,
// tasks, or a Server group's rate: requests per second over its replicas).
func fleetAnswer(spec *v1alpha1.SchedExperimentSpec, axes []SweepAxis, shapes []v1alpha1.SweepShapeResult) []v1alpha1.FleetAnswer {
	if len(axes) == 0 {
		return nil
	}
	switch axes[0].Param.Target {
	case v1alpha1.SweepReplicas, v1alpha1.SweepTasks, v1alpha1.SweepRate:
	default:
		return nil
	}
	var out []v1alpha1.FleetAnswer
	for _, v := range spec.Variants {
		f := v1alpha1.FleetAnswer{Variant: v.Name, Parameter: axes[0].Name}
		for _, s := range shapes {
			if s.Variant != v.Name {
				continue
			}
			f.Nodes += int64(s.Count)
			mult := int64(1)
			if axes[0].Param.Target == v1alpha1.SweepTasks || axes[0].Param.Target == v1alpha1.SweepRate {
				// Tasks and rate are per replica: count every replica's.
				for _, g := range spec.Workload.Groups {
					if g.Name == axes[0].Param.Group {
						mult = int64(g.ReplicaCount())
					}
				}
			}
			per, hi := int64(0), int64(0)
			if s.Answer != nil {
				per = s.Answer.At[0] * mult
			}
			hi = per
			if s.OptimisticAnswer != nil {
				hi = s.OptimisticAnswer.At[0] * mult
			}
			f.Total += per * int64(s.Count)
			f.TotalHigh += hi * int64(s.Count)
			if hi != per {
				f.PerShape = append(f.PerShape, fmt.Sprintf("%s: %d (up to %d) × %d", s.Shape, per, hi, s.Count))
			} else {
				f.PerShape = append(f.PerShape, fmt.Sprintf("%s: %d × %d", s.Shape, per, s.Count))
			}
		}
		out = append(out, f)
	}
	return out
}

// GroupShapes merges identical node shapes (same CPUs, scheduler, HZ,
// preemption, scaling and topology), summing their counts, in order of first
// appearance: the fleet of a cluster's selected nodes, one shape per node.
func GroupShapes(nodes []v1alpha1.NodeShape) []v1alpha1.NodeShape {
	var out []v1alpha1.NodeShape
	idx := map[string]int{}
	for _, n := range nodes {
		key := fmt.Sprintf("%s/%d/%s/%s", n.Name(), n.HZ, n.Preempt, n.TunableScaling)
		c := int32(shapeCount(n))
		if i, ok := idx[key]; ok {
			sum := *out[i].Count + c
			out[i].Count = &sum
			continue
		}
		idx[key] = len(out)
		n.Count = &c
		out = append(out, n)
	}
	return out
}

// SweepSummary is one line per shape × variant: the answer and why.
func SweepSummary(spec *v1alpha1.SchedExperimentSpec, st *v1alpha1.SweepStatus) []string {
	var lines []string
	for _, s := range st.Shapes {
		ans := "none"
		if s.Answer != nil {
			var parts []string
			for i, v := range s.Answer.At {
				parts = append(parts, fmt.Sprintf("%s=%d", st.Parameters[i], v))
			}
			ans = strings.Join(parts, ", ")
			if o := s.OptimisticAnswer; o != nil && o.At[0] != s.Answer.At[0] {
				ans += fmt.Sprintf(" (95%% range up to %s=%d)", st.Parameters[0], o.At[0])
			}
		}
		lines = append(lines, fmt.Sprintf("%s, %s: %s (%s)", s.Shape, s.Variant, ans, s.Reason))
	}
	return lines
}
