package bench

import (
	"fmt"
	"image/color"
	"io"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// serverColors gives each server of a -peers run its colour, so a store's rows read as one.
var serverColors = map[string]color.Color{
	ServerCassandra: rgb(0x4e79a7), ServerPostgres: rgb(0x59a14f),
	ServerRedisAlways: rgb(0xe15759), ServerRedisEverysec: rgb(0xf28e2b),
}

// WritePeersChart renders a -peers report as a PNG: one panel per concurrency level, one row per
// operation (first at the top), a line from its p50 (circle) to its p99 (triangle) on a log
// scale, coloured by server.
func WritePeersChart(w io.Writer, r *Report, catalog []Spec) error {
	if len(r.Phases) == 0 {
		return fmt.Errorf("chart: no phase to draw")
	}
	server := map[string]string{}
	for _, s := range catalog {
		server[s.Name] = cmp(s.Server, ServerCassandra)
	}
	plots := make([][]*plot.Plot, len(r.Phases))
	rows := 0
	for i, p := range r.Phases {
		pl := plot.New()
		pl.Title.Text = p.Label() + ": p50 (circle) to p99 (triangle)"
		pl.X.Label.Text = "latency, ms (log)"
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = logTicks125{}
		pl.Add(plotter.NewGrid())
		var names []string
		n := len(p.Operations)
		lo, hi := 0.0, 0.0
		for _, s := range p.Operations {
			if s.Requests > 0 && s.P50Ms > 0 {
				if lo == 0 || s.P50Ms < lo {
					lo = s.P50Ms
				}
				hi = max(hi, s.P99Ms)
			}
		}
		if lo > 0 {
			// Room around the first and last marker, so no glyph is cut at the frame.
			pl.X.Min, pl.X.Max = lo/1.3, hi*1.3
		}
		for j, s := range p.Operations {
			names = append(names, s.Op)
			if s.Requests == 0 || s.P50Ms <= 0 {
				continue
			}
			y := float64(n - 1 - j)
			c := serverColors[server[s.Op]]
			if c == nil {
				c = color.Black
			}
			line, err := plotter.NewLine(plotter.XYs{{X: s.P50Ms, Y: y}, {X: max(s.P99Ms, s.P50Ms), Y: y}})
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			line.Color, line.Width = c, vg.Points(2)
			p50, err := plotter.NewScatter(plotter.XYs{{X: s.P50Ms, Y: y}})
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			p50.Color, p50.Shape, p50.Radius = c, draw.CircleGlyph{}, vg.Points(3.5)
			p99, err := plotter.NewScatter(plotter.XYs{{X: max(s.P99Ms, s.P50Ms), Y: y}})
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			p99.Color, p99.Shape, p99.Radius = c, draw.TriangleGlyph{}, vg.Points(3.5)
			pl.Add(line, p50, p99)
		}
		slices.Reverse(names)
		pl.NominalY(names...)
		rows = max(rows, n)
		plots[i] = []*plot.Plot{pl}
	}
	panelHeight := vg.Length(rows)*0.24*vg.Inch + 1.1*vg.Inch
	img := vgimg.New(9*vg.Inch, vg.Length(len(plots))*panelHeight)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}
