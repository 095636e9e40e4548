package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// Charts are written as PNG and SVG, 1280 px wide at 96 dpi: wide enough for
// a README, with fonts sized for it.
const (
	chartWidthPx  = 1280
	chartHeightPx = 720
	chartDPI      = 96
)

func px(n int) vg.Length { return vg.Length(n) * vg.Inch / chartDPI }

var (
	measuredColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	predictedColor = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	constraintRed  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	// palette: one colour per variant (Tableau 10).
	palette = []color.Color{
		measuredColor, predictedColor, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, constraintRed,
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	}
)

func paletteColor(i int) color.Color { return palette[i%len(palette)] }

// chartFile is one chart written: its file name without extension and what
// it shows, for the Markdown report.
type chartFile struct {
	Name    string `json:"name"`
	Caption string `json:"caption"`
}

// newChart is a plot styled for a README: large title, labels and ticks.
func newChart(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(18)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(15)
		a.Tick.Label.Font.Size = vg.Points(13)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(13)
	p.Legend.ThumbnailWidth = vg.Points(28)
	p.Title.Padding = vg.Points(10)
	return p
}

// addGrid adds grid lines at the major ticks of the y axis and, with
// vertical, of the x axis (not for bars: a line through every pair of bars
// only clutters them).
func addGrid(p *plot.Plot, vertical bool) {
	g := plotter.NewGrid()
	if !vertical {
		g.Vertical.Color = nil
	}
	p.Add(g)
}

// drawPlot draws p on c. gonum/plot v0.17 pads the data area for a centred
// axis label placed at the linear midpoint of the axis range
// (verticalAxis.GlyphBoxes, horizontalAxis.GlyphBoxes), which on a log axis
// is near its top end: the plot shrank by up to a sixth of the chart for a
// label drawn elsewhere. A log axis's label is drawn here instead, beside
// the canvas the plot gets.
func drawPlot(c draw.Canvas, p *plot.Plot) {
	if _, ok := p.X.Scale.(plot.LogScale); ok && p.X.Label.Text != "" {
		l := p.X.Label
		p.X.Label.Text = ""
		defer func() { p.X.Label.Text = l.Text }()
		descent := l.TextStyle.FontExtents().Descent
		c.FillText(l.TextStyle, vg.Point{X: c.Center().X, Y: c.Min.Y + descent}, l.Text)
		c = draw.Crop(c, 0, 0, l.TextStyle.Height(l.Text)+l.Padding, 0)
	}
	if _, ok := p.Y.Scale.(plot.LogScale); ok && p.Y.Label.Text != "" {
		l := p.Y.Label
		p.Y.Label.Text = ""
		defer func() { p.Y.Label.Text = l.Text }()
		var title vg.Length
		if p.Title.Text != "" {
			title = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		sty := l.TextStyle
		sty.Rotation += math.Pi / 2
		h := l.TextStyle.Height(l.Text)
		descent := l.TextStyle.FontExtents().Descent
		c.FillText(sty, vg.Point{X: c.Min.X + h - descent, Y: (c.Min.Y + c.Max.Y - title) / 2}, l.Text)
		c = draw.Crop(c, h+l.Padding, 0, 0, 0)
	}
	p.Draw(c)
}

// saveChart writes p as dir/name.png and dir/name.svg.
func saveChart(dir, name string, p *plot.Plot, w, h vg.Length) error {
	return saveCanvas(dir, name, w, h, func(c draw.Canvas) { drawPlot(c, p) })
}

// saveCanvas draws onto a PNG and an SVG canvas of w × h, inside a margin,
// and writes both.
func saveCanvas(dir, name string, w, h vg.Length, drawOn func(draw.Canvas)) error {
	margin := func(c draw.Canvas) draw.Canvas { return draw.Crop(c, px(12), -px(24), px(8), -px(12)) }
	// White backgrounds: a transparent chart is unreadable on a dark page.
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(chartDPI), vgimg.UseBackgroundColor(color.White))
	drawOn(margin(draw.New(img)))
	svg := vgsvg.New(w, h)
	sc := draw.New(svg)
	sc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: w, Y: 0}, {X: w, Y: h}, {X: 0, Y: h}})
	drawOn(margin(sc))
	if err := writeTo(filepath.Join(dir, name+".png"), vgimg.PngCanvas{Canvas: img}); err != nil {
		return err
	}
	return writeTo(filepath.Join(dir, name+".svg"), svg)
}

func writeTo(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("chart %s: %w", path, err)
	}
	return f.Close()
}

// metricUnit is the axis label of a metric.
func metricUnit(metric string) string {
	switch {
	case metric == "cpu":
		return "CPU (CPUs)"
	case metric == "cpuPerTask":
		return "CPU per task (CPUs)"
	case metric == "share":
		return "share of the workload's CPU time (fraction)"
	case strings.HasPrefix(metric, "wakeupLatencyUs."):
		return "wake-up latency " + strings.TrimPrefix(metric, "wakeupLatencyUs.") + " (µs)"
	case strings.HasPrefix(metric, "ctxSwitchesPerSec."):
		return strings.TrimPrefix(metric, "ctxSwitchesPerSec.") + " context switches (per second)"
	case metric == "deadlineMissRatio":
		return "deadline misses (fraction of periods)"
	case metric == "opsPerSec":
		return "operations (per second)"
	}
	return metric
}

// parameterUnit is the axis label of a sweep parameter.
func parameterUnit(name string) string {
	switch {
	case strings.HasSuffix(name, ".replicas"):
		return name + " (cgroups)"
	case strings.HasSuffix(name, ".tasks"):
		return name + " (tasks per replica)"
	case strings.HasSuffix(name, ".cpuWeight"):
		return name + " (cpu.weight)"
	case name == "cpus":
		return "CPUs per node"
	case strings.HasSuffix(name, "Us"):
		return name + " (µs)"
	case strings.HasSuffix(name, "nrMigrate"):
		return name + " (tasks)"
	}
	return name
}

func fileSafe(s string) string {
	return strings.NewReplacer("/", "-", ".", "-", " ", "-", "×", "x").Replace(s)
}

// rectBars draws bars centred at data x positions with a width in data units,
// so error bars can sit exactly on the bar they belong to.
type rectBars struct {
	xs, ys []float64
	width  float64
	color  color.Color
}

func (b *rectBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for i := range b.xs {
		x0, x1 := trX(b.xs[i]-b.width/2), trX(b.xs[i]+b.width/2)
		y0, y1 := trY(0), trY(b.ys[i])
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.color, c.ClipPolygonXY(pts))
	}
}

func (b *rectBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i := range b.xs {
		xmin, xmax = min(xmin, b.xs[i]-b.width), max(xmax, b.xs[i]+b.width)
		ymin, ymax = min(ymin, b.ys[i]), max(ymax, b.ys[i])
	}
	return xmin, xmax, ymin, ymax
}

func (b *rectBars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(b.color, c.ClipPolygonY(pts))
}

// ci95 is the half-width of the 95% confidence interval of a measured mean.
func ci95(m *v1alpha1.MeasuredMetrics, metric string) float64 {
	if m == nil || m.Stddev == nil || m.N < 2 {
		return 0
	}
	sd, ok := experiment.MetricValue(m.Stddev, metric)
	if !ok {
		return 0
	}
	return experiment.ConfidenceHalfWidth(sd, int(m.N))
}

// barChart draws metric for every variant × group in groups (all groups when
// nil): measured bars with their 95% interval, predicted bars beside them.
func barChart(rep *experiment.Report, metric string, groups map[string]bool) (*plot.Plot, int) {
	var labels []string
	var mx, my, px_, py []float64
	var errXY plotter.XYs
	var errs plotter.YErrors
	const w = 0.36
	top := 0.0
	measured := false
	for _, v := range rep.Variants {
		for _, g := range v.Groups {
			if groups != nil && !groups[g.Name] {
				continue
			}
			i := float64(len(labels))
			labels = append(labels, v.Name+"\n"+g.Name)
			if g.Measured != nil {
				if val, ok := experiment.MetricValue(&g.Measured.Metrics, metric); ok {
					h := ci95(g.Measured, metric)
					mx, my = append(mx, i-w/2), append(my, val)
					errXY = append(errXY, plotter.XY{X: i - w/2, Y: val})
					errs = append(errs, struct{ Low, High float64 }{h, h})
					top = max(top, val+h)
					measured = true
				}
			}
			if val, ok := experiment.MetricValue(g.Predicted, metric); ok {
				x := i + w/2
				if g.Measured == nil {
					x = i
				}
				px_, py = append(px_, x), append(py, val)
				top = max(top, val)
			}
		}
	}
	if len(labels) == 0 {
		return nil, 0
	}
	title := metricUnit(metric)
	if i := strings.Index(title, " ("); i > 0 {
		title = title[:i]
	}
	if measured {
		title += ": measured (95% interval) vs predicted"
	} else {
		title += ": predicted"
	}
	p := newChart(title, "variant / group", metricUnit(metric))
	addGrid(p, false)
	if measured {
		mb := &rectBars{xs: mx, ys: my, width: w, color: measuredColor}
		p.Add(mb)
		p.Legend.Add("measured", mb)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{errXY, errs})
		if err == nil {
			eb.LineStyle.Width = vg.Points(1.5)
			eb.CapWidth = vg.Points(10)
			p.Add(eb)
		}
	}
	pw := w
	if !measured {
		pw = 2 * w
	}
	pb := &rectBars{xs: px_, ys: py, width: pw, color: predictedColor}
	p.Add(pb)
	p.Legend.Add("predicted", pb)
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(10), -vg.Points(6)
	p.Y.Min, p.Y.Max = 0, top*1.3+1e-9
	return p, len(labels)
}

// ccdfPoints are the points (latency, fraction of wake-ups later than it) a
// latency summary gives: its percentiles, and its maximum at 1/count.
func ccdfPoints(l *v1alpha1.LatencySummary) plotter.XYs {
	if l == nil || l.P50 <= 0 {
		return nil
	}
	pts := plotter.XYs{{X: l.P50, Y: 0.5}, {X: l.P90, Y: 0.1}, {X: l.P99, Y: 0.01}, {X: l.P999, Y: 0.001}}
	if l.Count > 1000 && l.Max > l.P999 {
		pts = append(pts, plotter.XY{X: l.Max, Y: 1 / float64(l.Count)})
	}
	// Keep it a function: drop points that do not move right.
	out := pts[:1]
	for _, p := range pts[1:] {
		if p.X > out[len(out)-1].X && p.X > 0 {
			out = append(out, p)
		}
	}
	return out
}

// latencyCCDF draws, for one group, the complementary CDF of wake-up latency
// per variant: measured solid, predicted dashed, on log-log axes.
func latencyCCDF(rep *experiment.Report, group string) *plot.Plot {
	p := newChart(group+": wake-up latency CCDF, measured (solid) vs predicted (dashed)",
		"wake-up latency (µs, log scale)", "fraction of wake-ups later (log scale)")
	addGrid(p, true)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	lines := 0
	xmin, xmax, ymin := math.Inf(1), 0.0, 1.0
	for vi, v := range rep.Variants {
		for _, g := range v.Groups {
			if g.Name != group {
				continue
			}
			var meas *v1alpha1.LatencySummary
			if g.Measured != nil {
				meas = g.Measured.WakeupLatencyUs
			}
			var pred *v1alpha1.LatencySummary
			if g.Predicted != nil {
				pred = g.Predicted.WakeupLatencyUs
			}
			for k, l := range []*v1alpha1.LatencySummary{meas, pred} {
				pts := ccdfPoints(l)
				if len(pts) < 2 {
					continue
				}
				ln, sc, err := plotter.NewLinePoints(pts)
				if err != nil {
					continue
				}
				ln.Color, sc.Color = paletteColor(vi), paletteColor(vi)
				ln.Width = vg.Points(2.5)
				sc.Radius = vg.Points(4)
				what := "measured"
				if k == 1 {
					ln.Dashes = []vg.Length{vg.Points(8), vg.Points(5)}
					sc.Shape = draw.CrossGlyph{}
					what = "predicted"
				} else {
					sc.Shape = draw.CircleGlyph{}
				}
				p.Add(ln, sc)
				p.Legend.Add(v.Name+" "+what, ln, sc)
				for _, pt := range pts {
					xmin, xmax, ymin = min(xmin, pt.X), max(xmax, pt.X), min(ymin, pt.Y)
				}
				lines++
			}
		}
	}
	if lines == 0 {
		return nil
	}
	p.X.Min, p.X.Max = xmin/1.5, xmax*1.5
	p.Y.Min, p.Y.Max = ymin/2, 1
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(10)
	return p
}

var latencyPercentiles = []struct{ label, metric string }{
	{"p50", "wakeupLatencyUs.p50"}, {"p90", "wakeupLatencyUs.p90"}, {"p99", "wakeupLatencyUs.p99"}, {"p99.9", "wakeupLatencyUs.p999"},
}

// latencyPercentileChart draws one group's latency percentiles per variant:
// measured means with 95% intervals (circles) and predicted (crosses).
func latencyPercentileChart(rep *experiment.Report, group string) *plot.Plot {
	p := newChart(group+": wake-up latency percentiles, measured (95% interval) vs predicted",
		"percentile", "wake-up latency (µs, log scale)")
	addGrid(p, false)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	var variants []experiment.VariantReport
	for _, v := range rep.Variants {
		for _, g := range v.Groups {
			if g.Name == group {
				variants = append(variants, experiment.VariantReport{Name: v.Name, Groups: []experiment.GroupReport{g}})
			}
		}
	}
	n := len(variants)
	if n == 0 {
		return nil
	}
	spread := 0.6 / float64(n)
	ymin, ymax := math.Inf(1), 0.0
	points := 0
	for vi, v := range variants {
		g := v.Groups[0]
		off := (float64(vi) - float64(n-1)/2) * spread
		var mxy, pxy plotter.XYs
		var errs plotter.YErrors
		for pi, pc := range latencyPercentiles {
			if g.Measured != nil {
				if val, ok := experiment.MetricValue(&g.Measured.Metrics, pc.metric); ok && val > 0 {
					h := ci95(g.Measured, pc.metric)
					low := math.Min(h, 0.9*val) // a log axis cannot show zero
					mxy = append(mxy, plotter.XY{X: float64(pi) + off - spread/6, Y: val})
					errs = append(errs, struct{ Low, High float64 }{low, h})
					ymin, ymax = min(ymin, val-low), max(ymax, val+h)
				}
			}
			if val, ok := experiment.MetricValue(g.Predicted, pc.metric); ok && val > 0 {
				pxy = append(pxy, plotter.XY{X: float64(pi) + off + spread/6, Y: val})
				ymin, ymax = min(ymin, val), max(ymax, val)
			}
		}
		if len(mxy) > 0 {
			sc, _ := plotter.NewScatter(mxy)
			sc.Color, sc.Shape, sc.Radius = paletteColor(vi), draw.CircleGlyph{}, vg.Points(5)
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{mxy, errs})
			if err == nil {
				eb.Color, eb.LineStyle.Width, eb.CapWidth = paletteColor(vi), vg.Points(1.5), vg.Points(8)
				p.Add(eb)
			}
			p.Add(sc)
			p.Legend.Add(v.Name+" measured", sc)
			points += len(mxy)
		}
		if len(pxy) > 0 {
			sc, _ := plotter.NewScatter(pxy)
			sc.Color, sc.Shape, sc.Radius = paletteColor(vi), draw.CrossGlyph{}, vg.Points(7)
			sc.GlyphStyle.Radius = vg.Points(7)
			p.Add(sc)
			p.Legend.Add(v.Name+" predicted", sc)
			points += len(pxy)
		}
	}
	if points == 0 {
		return nil
	}
	labels := make([]string, len(latencyPercentiles))
	for i, pc := range latencyPercentiles {
		labels[i] = pc.label
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	p.Y.Min, p.Y.Max = ymin/1.5, ymax*3
	// Bottom right: the low latencies of the highest percentile are rare,
	// and at the top the legend would run into the title.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(10), vg.Points(10)
	return p
}

// writeReportCharts writes the charts a report answers its question with:
// one per objective (metric × group): for a latency metric the group's CCDF
// and its percentiles, otherwise bars of that metric; without objectives,
// CPU per group and the latency charts of every group with wake-ups.
func writeReportCharts(dir string, spec *v1alpha1.SchedExperimentSpec, rep *experiment.Report) ([]chartFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []chartFile
	done := map[string]bool{}
	add := func(name, caption string, p *plot.Plot, width vg.Length) error {
		if p == nil || done[name] {
			return nil
		}
		done[name] = true
		if err := saveChart(dir, name, p, width, px(chartHeightPx)); err != nil {
			return err
		}
		out = append(out, chartFile{Name: name, Caption: caption})
		return nil
	}
	latency := func(group string) error {
		if err := add("latency-ccdf-"+fileSafe(group), group+": wake-up latency CCDF, measured vs predicted per variant",
			latencyCCDF(rep, group), px(chartWidthPx)); err != nil {
			return err
		}
		return add("latency-percentiles-"+fileSafe(group), group+": wake-up latency percentiles with 95% intervals",
			latencyPercentileChart(rep, group), px(chartWidthPx))
	}
	bars := func(metric string, groups map[string]bool, name string) error {
		p, n := barChart(rep, metric, groups)
		w := px(max(chartWidthPx, n*140))
		return add(name, metricUnit(metric)+": measured vs predicted", p, w)
	}
	for _, o := range spec.Objectives {
		m := string(o.Metric)
		if strings.HasPrefix(m, "wakeupLatencyUs.") {
			if err := latency(o.Group); err != nil {
				return out, err
			}
			continue
		}
		if err := bars(m, map[string]bool{o.Group: true}, fileSafe(m)+"-"+fileSafe(o.Group)); err != nil {
			return out, err
		}
	}
	if len(spec.Objectives) == 0 {
		if err := bars("cpu", nil, "cpu"); err != nil {
			return out, err
		}
		var groups []string
		seen := map[string]bool{}
		for _, v := range rep.Variants {
			for _, g := range v.Groups {
				has := g.Predicted != nil && g.Predicted.WakeupLatencyUs != nil ||
					g.Measured != nil && g.Measured.WakeupLatencyUs != nil
				if has && !seen[g.Name] {
					seen[g.Name] = true
					groups = append(groups, g.Name)
				}
			}
		}
		sort.Strings(groups)
		for _, g := range groups {
			if err := latency(g); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// chartsMarkdown embeds charts in Markdown (the PNG, with the SVG linked).
func chartsMarkdown(charts []chartFile) string {
	var b strings.Builder
	for _, c := range charts {
		fmt.Fprintf(&b, "\n![%s](%s.png)\n\n[SVG](%s.svg)\n", c.Caption, c.Name, c.Name)
	}
	return b.String()
}
