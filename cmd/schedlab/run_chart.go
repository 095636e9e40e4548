package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/schedlab/schedlab/internal/experiment"
)

// writeChart draws measured (with ± one standard deviation) and predicted
// CPU side by side for every variant × group, as SVG or PNG by the file's
// extension.
func writeChart(path string, rep *experiment.Report) error {
	var labels []string
	var meas, pred plotter.Values
	var errs plotter.YErrors
	for _, v := range rep.Variants {
		for _, g := range v.Groups {
			labels = append(labels, v.Name+"/"+g.Name)
			m, p, sd := 0.0, 0.0, 0.0
			if g.Measured != nil {
				m = g.Measured.CPU
				if g.Measured.Stddev != nil {
					sd = g.Measured.Stddev.CPU
				}
			}
			if g.Predicted != nil {
				p = g.Predicted.CPU
			}
			meas = append(meas, m)
			pred = append(pred, p)
			errs = append(errs, struct{ Low, High float64 }{sd, sd})
		}
	}
	if len(labels) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "CPU per group: measured vs predicted"
	p.Y.Label.Text = "CPUs"
	w := vg.Points(14)
	mb, err := plotter.NewBarChart(meas, w)
	if err != nil {
		return err
	}
	mb.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	mb.Offset = -w / 2
	pb, err := plotter.NewBarChart(pred, w)
	if err != nil {
		return err
	}
	pb.Color = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	pb.Offset = w / 2
	p.Add(mb, pb)
	xys := make(plotter.XYs, len(meas))
	for i := range meas {
		xys[i].X, xys[i].Y = float64(i), meas[i]
	}
	if eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{xys, errs}); err == nil {
		p.Add(eb)
	}
	p.Legend.Add("measured", mb)
	p.Legend.Add("predicted", pb)
	p.Legend.Top = true
	p.NominalX(labels...)
	// Head room for the legend above the tallest bar.
	top := 0.0
	for i := range meas {
		top = max(top, meas[i]+errs[i].High, pred[i])
	}
	p.Y.Min, p.Y.Max = 0, top*1.3+0.01
	width := max(5*vg.Inch, vg.Length(len(labels))*1.3*vg.Inch)
	if err := p.Save(width, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}
