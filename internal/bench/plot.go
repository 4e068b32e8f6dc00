package bench

import (
	"fmt"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteSVG draws res as SVG: above, the ack and end-to-end latency p50 and p99 of each
// second over the run; below, the distribution (cumulative) of both latencies.
func (res *Result) WriteSVG(w io.Writer) error {
	c := vgsvg.New(8*vg.Inch, 9*vg.Inch)
	if err := res.draw(c); err != nil {
		return err
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("bench: writing the plot: %w", err)
	}
	return nil
}

// draw draws the two panels on c.
func (res *Result) draw(c vg.CanvasSizer) error {
	msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

	over := plot.New()
	over.Title.Text = "Latency over time (per second)"
	over.X.Label.Text = "time (s, at the end of each second)"
	over.Y.Label.Text = "latency (ms)"
	over.Y.Min = 0
	series := func(f func(Point) time.Duration, e2e bool) plotter.XYs {
		var xys plotter.XYs
		for _, p := range res.Timeline {
			if e2e && p.E2EMax == 0 || !e2e && p.Records == 0 || p.Span < time.Second/2 {
				continue // nothing in that window, or the run's last moments (too few to tell)
			}
			xys = append(xys, plotter.XY{X: p.At.Seconds(), Y: msf(f(p))})
		}
		return xys
	}
	if err := plotutil.AddLinePoints(over,
		"ack p50", series(func(p Point) time.Duration { return p.AckP50 }, false),
		"ack p99", series(func(p Point) time.Duration { return p.AckP99 }, false),
		"e2e p50", series(func(p Point) time.Duration { return p.E2EP50 }, true),
		"e2e p99", series(func(p Point) time.Duration { return p.E2EP99 }, true),
	); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	over.Legend.Top = true

	dist := plot.New()
	dist.Title.Text = "Latency distribution"
	dist.X.Label.Text = "latency (ms)"
	dist.Y.Label.Text = "fraction of records at or below"
	dist.X.Min, dist.Y.Min, dist.Y.Max = 0, 0, 1
	cdf := func(h *Histogram) plotter.XYs {
		xys := plotter.XYs{{X: 0, Y: 0}}
		h.CDF(func(v time.Duration, frac float64) { xys = append(xys, plotter.XY{X: msf(v), Y: frac}) })
		return xys
	}
	if err := plotutil.AddLines(dist, "ack", cdf(&res.Ack), "end-to-end", cdf(&res.E2E)); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	dist.Legend.Top = false
	dist.Legend.Left = false

	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 8 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	plots := [][]*plot.Plot{{over}, {dist}}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	return nil
}
