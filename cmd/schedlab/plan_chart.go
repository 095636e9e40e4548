package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// maxChartLines bounds the lines of one chart: with a second parameter,
// that many of its values are drawn, evenly spaced.
const maxChartLines = 8

// writePlanCharts draws one chart per curve column (curve-N-group-metric.png):
// the metric against the first parameter, one line per shape × variant
// (× second parameter value), the constraint bounds as dashed red lines and
// each answer as a circled point.
func writePlanCharts(dir string, spec *v1alpha1.SchedExperimentSpec, st *v1alpha1.SweepStatus) error {
	cols := experiment.SweepColumns(spec)
	if len(st.Parameters) == 0 {
		return nil
	}
	for ci, col := range cols {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s vs %s", spec.Variants[0].Name, col.Name(), st.Parameters[0])
		if len(spec.Variants) > 1 {
			p.Title.Text = fmt.Sprintf("%s vs %s", col.Name(), st.Parameters[0])
		}
		p.X.Label.Text = st.Parameters[0]
		p.Y.Label.Text = col.Name()
		p.Legend.Top = true
		xmin, xmax := 0.0, 0.0
		line := 0
		for _, s := range st.Shapes {
			series := splitBySecond(s.Points, len(st.Parameters) == 2)
			for _, sr := range series {
				xys := make(plotter.XYs, 0, len(sr.points))
				for _, pt := range sr.points {
					if pt.Unsupported != "" || ci >= len(pt.Values) {
						continue
					}
					x := float64(pt.At[0])
					xys = append(xys, plotter.XY{X: x, Y: pt.Values[ci]})
					if line == 0 && len(xys) == 1 {
						xmin, xmax = x, x
					}
					xmin, xmax = min(xmin, x), max(xmax, x)
				}
				if len(xys) == 0 {
					continue
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return err
				}
				l.Color = plotutil.Color(line)
				l.Width = vg.Points(1.5)
				p.Add(l)
				name := s.Shape
				if len(spec.Variants) > 1 {
					name += " " + s.Variant
				}
				if sr.label != "" {
					name += " " + st.Parameters[1] + "=" + sr.label
				}
				p.Legend.Add(name, l)
				line++
			}
			if s.Answer != nil && ci < len(s.Answer.Values) {
				sc, err := plotter.NewScatter(plotter.XYs{{X: float64(s.Answer.At[0]), Y: s.Answer.Values[ci]}})
				if err != nil {
					return err
				}
				sc.GlyphStyle.Shape = draw.RingGlyph{}
				sc.GlyphStyle.Radius = vg.Points(6)
				sc.GlyphStyle.Color = color.Black
				p.Add(sc)
			}
		}
		if line == 0 {
			continue
		}
		for _, c := range spec.Constraints {
			if c.Group != col.Group || string(c.Metric) != col.Metric {
				continue
			}
			for _, bound := range []*float64{c.Max, c.Min} {
				if bound == nil {
					continue
				}
				l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: *bound}, {X: xmax, Y: *bound}})
				if err != nil {
					return err
				}
				l.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
				l.Width = vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(experiment.ConstraintText(c), l)
			}
		}
		// Keep the constraint readable: a curve that runs far past its
		// bound is clipped at four times the bound.
		if hi := constraintTop(spec.Constraints, col); hi > 0 && p.Y.Max > 4*hi {
			p.Y.Max = 4 * hi
		}
		p.Add(plotter.NewGrid())
		name := fmt.Sprintf("curve-%d-%s.png", ci+1, strings.NewReplacer("/", "-", ".", "-").Replace(col.Name()))
		if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("chart %s: %w", name, err)
		}
	}
	return nil
}

type chartSeries struct {
	label  string
	points []v1alpha1.SweepPoint
}

// splitBySecond splits a curve's points into one series per value of the
// second parameter (at most maxChartLines of them, evenly spaced).
func splitBySecond(pts []v1alpha1.SweepPoint, two bool) []chartSeries {
	if !two {
		return []chartSeries{{points: pts}}
	}
	var order []int64
	by := map[int64][]v1alpha1.SweepPoint{}
	for _, p := range pts {
		v := p.At[1]
		if _, ok := by[v]; !ok {
			order = append(order, v)
		}
		by[v] = append(by[v], p)
	}
	step := 1
	if len(order) > maxChartLines {
		step = (len(order) + maxChartLines - 1) / maxChartLines
	}
	var out []chartSeries
	for i := 0; i < len(order); i += step {
		out = append(out, chartSeries{label: fmt.Sprint(order[i]), points: by[order[i]]})
	}
	return out
}

// constraintTop is the largest bound of the constraints on a column.
func constraintTop(cs []v1alpha1.Constraint, col experiment.SweepColumn) float64 {
	top := 0.0
	for _, c := range cs {
		if c.Group != col.Group || string(c.Metric) != col.Metric {
			continue
		}
		for _, b := range []*float64{c.Max, c.Min} {
			if b != nil && *b > top {
				top = *b
			}
		}
	}
	return top
}
