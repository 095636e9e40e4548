package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// maxChartLines bounds the lines of one chart: with a second parameter,
// that many of its values are drawn, evenly spaced.
const maxChartLines = 8

// writePlanCharts draws one chart per curve column (curve-N-group-metric.png
// and .svg) with one panel per node shape: the metric against the first
// parameter, one line per variant (× second parameter value), the constraint
// bounds as dashed red lines and each answer as a circled point. The x axis
// is logarithmic where the grid spans two decades or more.
func writePlanCharts(dir string, spec *v1alpha1.SchedExperimentSpec, st *v1alpha1.SweepStatus) ([]chartFile, error) {
	cols := experiment.SweepColumns(spec)
	if len(st.Parameters) == 0 {
		return nil, nil
	}
	var shapes []string
	for _, s := range st.Shapes {
		if !slices.Contains(shapes, s.Shape) {
			shapes = append(shapes, s.Shape)
		}
	}
	var out []chartFile
	for ci, col := range cols {
		var panels []*plot.Plot
		for _, shape := range shapes {
			if p := planPanel(spec, st, ci, col, shape); p != nil {
				panels = append(panels, p)
			}
		}
		if len(panels) == 0 {
			continue
		}
		ncols := min(len(panels), 2)
		nrows := (len(panels) + ncols - 1) / ncols
		grid := make([][]*plot.Plot, nrows)
		for i := range grid {
			grid[i] = make([]*plot.Plot, ncols)
		}
		for i, p := range panels {
			grid[i/ncols][i%ncols] = p
		}
		w, h := px(chartWidthPx), px(chartHeightPx)
		if ncols == 2 {
			w = px(1600)
		}
		h = vg.Length(nrows) * h
		if nrows > 1 {
			h = vg.Length(nrows) * px(600)
		}
		name := fmt.Sprintf("curve-%d-%s", ci+1, fileSafe(col.Name()))
		err := saveCanvas(dir, name, w, h, func(c draw.Canvas) {
			tiles := draw.Tiles{Rows: nrows, Cols: ncols, PadX: vg.Points(16), PadY: vg.Points(16), PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8)}
			canvases := plot.Align(grid, tiles, c)
			for r := range grid {
				for k, p := range grid[r] {
					if p != nil {
						drawPlot(canvases[r][k], p)
					}
				}
			}
		})
		if err != nil {
			return out, fmt.Errorf("chart %s: %w", name, err)
		}
		out = append(out, chartFile{Name: name, Caption: fmt.Sprintf("%s against %s, one panel per node shape, with the constraint", col.Name(), st.Parameters[0])})
	}
	return out, nil
}

// planPanel is one node shape's panel of a curve column, nil without points.
func planPanel(spec *v1alpha1.SchedExperimentSpec, st *v1alpha1.SweepStatus, ci int, col experiment.SweepColumn, shape string) *plot.Plot {
	p := newChart(fmt.Sprintf("%s: %s", shape, col.Name()), parameterUnit(st.Parameters[0]), col.Group+" "+metricUnit(col.Metric))
	p.Title.TextStyle.Font.Size = vg.Points(16)
	addGrid(p, true)
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(10), -vg.Points(6)
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	line := 0
	for _, s := range st.Shapes {
		if s.Shape != shape {
			continue
		}
		for _, sr := range splitBySecond(s.Points, len(st.Parameters) == 2) {
			xys := make(plotter.XYs, 0, len(sr.points))
			for _, pt := range sr.points {
				if pt.Unsupported != "" || ci >= len(pt.Values) {
					continue
				}
				x := float64(pt.At[0])
				xys = append(xys, plotter.XY{X: x, Y: pt.Values[ci]})
				xmin, xmax, ymax = min(xmin, x), max(xmax, x), max(ymax, pt.Values[ci])
			}
			if len(xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				continue
			}
			l.Color = curveColor(line)
			l.Width = vg.Points(2)
			p.Add(l)
			name := s.Variant
			if sr.label != "" {
				name += " " + st.Parameters[1] + "=" + sr.label
			}
			p.Legend.Add(name, l)
			line++
		}
		if s.Answer != nil && ci < len(s.Answer.Values) {
			sc, err := plotter.NewScatter(plotter.XYs{{X: float64(s.Answer.At[0]), Y: s.Answer.Values[ci]}})
			if err == nil {
				sc.GlyphStyle.Shape = draw.RingGlyph{}
				sc.GlyphStyle.Radius = vg.Points(8)
				sc.GlyphStyle.Color = color.Black
				p.Add(sc)
				p.Legend.Add(fmt.Sprintf("answer (%s)", s.Variant), sc)
			}
		}
	}
	if line == 0 {
		return nil
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
				continue
			}
			l.Color = constraintRed
			l.Dashes = []vg.Length{vg.Points(8), vg.Points(4)}
			l.Width = vg.Points(2)
			p.Add(l)
			p.Legend.Add(experiment.ConstraintText(c), l)
			ymax = max(ymax, *bound)
		}
	}
	if xmin > 0 && xmax/xmin >= 100 {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.X.Label.Text += ", log scale"
	}
	// Keep the constraint readable: a curve that runs far past its bound is
	// clipped at four times the bound. Head room for the legend.
	top := ymax * 1.35
	if hi := constraintTop(spec.Constraints, col); hi > 0 && top > 4*hi {
		top = 4 * hi
	}
	p.Y.Min, p.Y.Max = 0, top+1e-9
	return p
}

// curveColor is the colour of the i-th curve of a panel: the palette
// without the red of the constraint line.
func curveColor(i int) color.Color {
	var cs []color.Color
	for _, c := range palette {
		if c != constraintRed {
			cs = append(cs, c)
		}
	}
	return cs[i%len(cs)]
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
