package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// percentileNames label the points of each operation's line, left to right, as
// percentilePoints orders them.
func percentileNames() []string { return []string{"p50", "p90", "p99", "p99.9", "max"} }

func percentilePoints(s Summary) plotter.XYs {
	ys := []float64{s.P50Ms, s.P90Ms, s.P99Ms, s.P999Ms, s.MaxMs}
	xys := make(plotter.XYs, len(ys))
	for i, y := range ys {
		xys[i] = plotter.XY{X: float64(i), Y: y}
	}
	return xys
}

// legendMargin is where the X axis starts, in percentile columns (p50 is at 0): room for the
// legend's longest operation name.
const legendMargin = -1.2

// phasePlot draws one phase: a line per operation through its percentiles, latency on a log
// scale so a 1 ms floor and a 200 ms tail are both readable.
func phasePlot(p PhaseResult) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("%s (%.0f req/s)", p.Label(), p.Throughput)
	pl.Y.Label.Text = "latency, ms (log)"
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = logTicks125{}
	pl.NominalX(percentileNames()...)
	pl.Legend.Top = true
	pl.Legend.Left = true
	// The legend gets a margin of its own left of p50: with seven operations it is as tall as
	// the panel, and over the data it would hide the lines it names.
	pl.X.Min = legendMargin
	pl.Add(plotter.NewGrid())
	drawn := 0
	for _, s := range p.Operations {
		if s.Requests == 0 {
			continue // nothing to draw on a log scale; the table shows its failures
		}
		line, points, err := plotter.NewLinePoints(percentilePoints(s))
		if err != nil {
			return nil, err
		}
		line.Color = lineColors[drawn%len(lineColors)]
		line.Dashes = plotutil.Dashes(drawn)
		points.Color = line.Color
		points.Shape = plotutil.Shape(drawn)
		pl.Add(line, points)
		pl.Legend.Add(s.Op, line, points)
		drawn++
	}
	if drawn == 0 {
		pl.Title.Text += ": no successful request"
	}
	return pl, nil
}

// lineColors gives each of up to twelve operations its own colour (the Tableau 10 palette and
// two darker ones); plotutil's default palette has seven, so the eighth operation would repeat
// the first's.
var lineColors = []color.Color{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759), rgb(0x76b7b2), rgb(0x59a14f),
	rgb(0xedc948), rgb(0xb07aa1), rgb(0xff9da7), rgb(0x9c755f), rgb(0xbab0ac),
	rgb(0x1b1b1b), rgb(0x2c6e49),
}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// WriteChart renders one panel per measured phase, stacked, as a PNG.
func WriteChart(w io.Writer, r *Report) error {
	if len(r.Phases) == 0 {
		return fmt.Errorf("chart: no phase to draw")
	}
	plots := make([][]*plot.Plot, len(r.Phases))
	for i, p := range r.Phases {
		pl, err := phasePlot(p)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		plots[i] = []*plot.Plot{pl}
	}
	const panelHeight = 3.2 * vg.Inch
	img := vgimg.New(9*vg.Inch, vg.Length(len(plots))*panelHeight)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// logTicks125 labels a log axis at 1, 2 and 5 times each power of ten, with unlabelled ticks at
// the other integers: plot.LogTicks labels only powers of ten, so a panel whose latencies all
// sit between 2 and 9 ms would carry no label at all.
type logTicks125 struct{}

// Ticks implements plot.Ticker.
func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
