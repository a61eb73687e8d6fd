package render

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tailorhq/tailor/internal/replay"
)

// chartColors are distinguishable on white and for common colour blindness
// (Okabe-Ito); usage is drawn in grey underneath.
var chartColors = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"}

const (
	chartWidth   = 960
	panelHeight  = 260
	chartLeft    = 70
	chartRight   = 20
	chartTop     = 56
	panelGap     = 50
	chartBuckets = 480
)

// WriteChart draws a series' usage and every policy's provisioned value
// over time as SVG: CPU on top, memory below. Each pixel column shows the
// highest value in its time bucket, so short peaks (the ones that matter
// for being over) stay visible.
func WriteChart(w io.Writer, rep *replay.Report, series string) error {
	var sr *replay.SeriesResult
	for i := range rep.Series {
		if rep.Series[i].Name == series {
			sr = &rep.Series[i]
		}
	}
	if sr == nil || sr.Trajectory == nil || len(sr.Trajectory.Samples) < 2 {
		return fmt.Errorf("no trajectory kept for series %q: name it in Options.Chart", series)
	}
	tr := sr.Trajectory
	t0 := tr.Samples[0].Time
	span := tr.Samples[len(tr.Samples)-1].Time.Sub(t0)
	height := chartTop + 2*panelHeight + panelGap + 40
	var b strings.Builder
	svgOpen(&b, chartWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">series %s: usage and what each policy provisioned (after %v warm-up)</text>`+"\n",
		chartLeft, html.EscapeString(series), rep.Warmup)
	// Legend.
	x := chartLeft
	fmt.Fprintf(&b, `<rect x="%d" y="32" width="14" height="10" fill="#bbbbbb"/><text x="%d" y="41">usage</text>`+"\n", x, x+18)
	x += 70
	for i, p := range rep.Policies {
		if !charted(p.Policy) {
			continue
		}
		c := chartColors[i%len(chartColors)]
		fmt.Fprintf(&b, `<line x1="%d" y1="37" x2="%d" y2="37" stroke="%s" stroke-width="2.5"/><text x="%d" y="41">%s</text>`+"\n",
			x, x+18, c, x+22, html.EscapeString(p.Policy))
		x += 30 + 7*len(p.Policy)
	}
	fmt.Fprintf(&b, `<text x="%d" y="41" fill="#555">(a line along the top edge is off the scale)</text>`+"\n", x+10)
	panels := []struct {
		title string
		unit  float64
		usage func(replay.Sample) float64
		prov  func(replay.Resources) float64
	}{
		{"CPU [cores]", 1, func(s replay.Sample) float64 { return s.CPU }, func(r replay.Resources) float64 { return r.CPU }},
		{"memory [GiB]", 1 << 30, func(s replay.Sample) float64 { return s.Memory }, func(r replay.Resources) float64 { return r.Memory }},
	}
	for pi, p := range panels {
		top := chartTop + pi*(panelHeight+panelGap)
		usage := bucketMax(tr.Samples, t0, span, func(i int) float64 { return p.usage(tr.Samples[i]) / p.unit })
		lines := make([][]float64, len(tr.Provisioned))
		ymax := maxOf(usage)
		for i, prov := range tr.Provisioned {
			lines[i] = bucketMax(tr.Samples, t0, span, func(j int) float64 { return p.prov(prov[j]) / p.unit })
		}
		// Scale to usage and to the policies that stay near it; a policy
		// far above (the doubling rule's capacity) is drawn along the top
		// edge, or usage would be a flat line at the bottom.
		for i, l := range lines {
			if !charted(rep.Policies[i].Policy) {
				lines[i] = nil
				continue
			}
			if m := maxOf(l); m <= 1.5*ymax || ymax == 0 {
				ymax = max(ymax, m)
			}
		}
		drawPanel(&b, top, p.title, ymax, span, usage, lines)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgOpen starts an SVG document of the given size on a white background,
// so it reads the same in dark-themed viewers.
func svgOpen(b *strings.Builder, width, height int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
}

// charted leaves the oracle out of series charts, as it is the usage
// itself, already drawn underneath, and the hindsight bounds, which follow
// it as closely.
func charted(policy string) bool {
	return policy != "oracle" && !strings.HasPrefix(policy, "hindsight")
}

// bucketMax reduces samples to chartBuckets columns, each the highest value
// (NaN for a column with none).
func bucketMax(samples []replay.Sample, t0 time.Time, span time.Duration, value func(int) float64) []float64 {
	out := make([]float64, chartBuckets)
	for i := range out {
		out[i] = math.NaN()
	}
	for i, s := range samples {
		v := value(i)
		if math.IsNaN(v) {
			continue
		}
		k := int(float64(s.Time.Sub(t0)) / float64(span) * (chartBuckets - 1))
		if math.IsNaN(out[k]) || v > out[k] {
			out[k] = v
		}
	}
	return out
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		if !math.IsNaN(x) {
			m = max(m, x)
		}
	}
	return m
}

// niceAxis picks an axis top and tick step for values up to v: the step is
// 1, 2 or 5 times a power of ten, and there are at most six ticks.
func niceAxis(v float64) (top, step float64) {
	if v <= 0 {
		return 1, 0.2
	}
	raw := v / 6
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * p
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*p {
			step = m * p
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

func drawPanel(b *strings.Builder, top int, title string, vmax float64, span time.Duration, usage []float64, lines [][]float64) {
	ymax, ystep := niceAxis(vmax)
	plotW := chartWidth - chartLeft - chartRight
	px := func(k int) float64 { return chartLeft + float64(k)*float64(plotW)/float64(chartBuckets-1) }
	py := func(v float64) float64 {
		return float64(top) + float64(panelHeight)*(1-math.Min(v, ymax*1.02)/ymax)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", chartLeft, top-8, title)
	// Horizontal grid and y labels.
	for v := 0.0; v <= ymax*(1+1e-9); v += ystep {
		y := py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", chartLeft, y, chartWidth-chartRight, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", chartLeft-6, y+4, fmtTick(v))
	}
	// Days on the x axis.
	days := span.Hours() / 24
	_, step := niceAxis(days)
	step = math.Max(1, step)
	for d := 0.0; d <= days; d += step {
		x := chartLeft + d/days*float64(plotW)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", x, top+panelHeight, x, top+panelHeight+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x, top+panelHeight+17, d)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" fill="#555">days after warm-up</text>`+"\n", chartWidth-chartRight, top+panelHeight+32)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", chartLeft, top, plotW, panelHeight)
	// Usage as a filled area, policies as lines over it.
	var area strings.Builder
	for k, v := range usage {
		if math.IsNaN(v) {
			continue
		}
		if area.Len() == 0 {
			fmt.Fprintf(&area, "M%.1f,%.1f ", px(k), py(0))
		}
		fmt.Fprintf(&area, "L%.1f,%.1f ", px(k), py(v))
		if k == len(usage)-1 || math.IsNaN(usage[k+1]) {
			fmt.Fprintf(&area, "L%.1f,%.1f Z ", px(k), py(0))
			fmt.Fprintf(b, `<path d="%s" fill="#bbbbbb"/>`+"\n", area.String())
			area.Reset()
		}
	}
	for i, l := range lines {
		if l == nil {
			continue
		}
		var pts strings.Builder
		for k, v := range l {
			if !math.IsNaN(v) {
				fmt.Fprintf(&pts, "%.1f,%.1f ", px(k), py(v))
			}
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-opacity="0.9"/>`+"\n",
			strings.TrimSpace(pts.String()), chartColors[i%len(chartColors)])
	}
}

func fmtTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

// Curve is one policy family swept over a parameter, for WriteTradeoff.
type Curve struct {
	Name   string
	Points []CurvePoint
	// MemoryOnly leaves the curve out of the CPU panel, for a sweep of a
	// memory parameter whose points all share one CPU figure.
	MemoryOnly bool
}

// CurvePoint is one setting of the swept parameter and its figures.
type CurvePoint struct {
	// Label is written beside the point; empty for none.
	Label  string
	Result replay.PolicyResult
	// Highlight draws the point larger and ringed: the setting in use.
	Highlight bool
}

// WriteTradeoff draws provisioned/used against the share of samples over,
// for CPU and memory side by side: lower and further left is better, so a
// curve that lies below and left of another dominates it.
func WriteTradeoff(w io.Writer, curves []Curve) error {
	panel := func(title string, fig func(replay.PolicyResult) replay.Figures, memory bool) TradeoffPanel {
		return TradeoffPanel{Title: title, Point: func(ci, pi int) (float64, float64, bool) {
			f := fig(curves[ci].Points[pi].Result)
			return f.OverPct, f.ProvisionedOverUsed, memory || !curves[ci].MemoryOnly
		}}
	}
	return WriteTradeoffChart(w, TradeoffChart{
		Title:  "Trade-off: fleet provisioned/used against share of samples over (lower left is better)",
		XLabel: "samples over provisioned", YLabel: "provisioned / used",
		Curves: curves,
		Panels: []TradeoffPanel{
			panel("CPU", func(p replay.PolicyResult) replay.Figures { return p.CPU }, false),
			panel("memory", func(p replay.PolicyResult) replay.Figures { return p.Memory }, true),
		},
	})
}

// TradeoffChart is a chart of cost against risk: each panel draws every
// curve it has points for, under one legend.
type TradeoffChart struct {
	Title, XLabel, YLabel string
	// XCount says x is a count (evictions), not a percentage.
	XCount bool
	Curves []Curve
	Panels []TradeoffPanel
}

// TradeoffPanel is one panel of a TradeoffChart.
type TradeoffPanel struct {
	Title string
	// Point is where point pi of curve ci goes: x in percent (a count
	// with TradeoffChart.XCount), y a ratio;
	// false leaves the curve out of the panel.
	Point func(ci, pi int) (x, y float64, ok bool)
	// Ring, when set, says which points to ring in this panel instead of
	// CurvePoint.Highlight.
	Ring func(ci, pi int) bool
}

// WriteTradeoffChart draws ch as SVG, its panels side by side.
func WriteTradeoffChart(w io.Writer, ch TradeoffChart) error {
	const pw, ph, left, gap = 400, 320, 70, 90
	curves := ch.Curves
	width := left + len(ch.Panels)*(pw+gap) - gap + left
	// The legend may take a second line; the height allows for it.
	height := 60 + 16 + ph + 60
	var b strings.Builder
	svgOpen(&b, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(ch.Title))
	x, y := left, 37
	for i, c := range curves {
		col := chartColors[i%len(chartColors)]
		if w := 30 + 7*len(c.Name); x > left && x+w > width {
			x, y = left, y+16
		}
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x+5, y, col, x+14, y+4, html.EscapeString(c.Name))
		x += 30 + 7*len(c.Name)
	}
	top := y + 23
	for pn, p := range ch.Panels {
		x0 := left + pn*(pw+gap)
		var xmax, ymax float64
		drawn := func(ci int) bool {
			if len(curves[ci].Points) == 0 {
				return false
			}
			_, _, ok := p.Point(ci, 0)
			return ok
		}
		for ci, c := range curves {
			for pi := range c.Points {
				if x, y, ok := p.Point(ci, pi); ok {
					xmax, ymax = max(xmax, x), max(ymax, y)
				}
			}
		}
		xmax, xstep := niceAxis(xmax)
		ymax, ystep := niceAxis(ymax)
		sx := func(v float64) float64 { return float64(x0) + v/xmax*pw }
		sy := func(v float64) float64 { return float64(top) + (1-v/ymax)*ph }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, top-8, html.EscapeString(p.Title))
		for vy := 0.0; vy <= ymax*(1+1e-9); vy += ystep {
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x0, sy(vy), x0+pw, sy(vy))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%sx</text>`+"\n", x0-6, sy(vy)+4, fmtTick(vy))
		}
		for vx := 0.0; vx <= xmax*(1+1e-9); vx += xstep {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`+"\n", sx(vx), top, sx(vx), top+ph)
			unit := "%"
			if ch.XCount {
				unit = ""
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s%s</text>`+"\n", sx(vx), top+ph+16, fmtTick(vx), unit)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, top, pw, ph)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n", x0+pw/2, top+ph+34, html.EscapeString(ch.XLabel))
		fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" fill="#555">%s</text>`+"\n", x0-48, top+ph/2, html.EscapeString(ch.YLabel))
		for ci, c := range curves {
			if !drawn(ci) {
				continue
			}
			col := chartColors[ci%len(chartColors)]
			var pts strings.Builder
			for pi := range c.Points {
				x, y, _ := p.Point(ci, pi)
				fmt.Fprintf(&pts, "%.1f,%.1f ", sx(x), sy(y))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.TrimSpace(pts.String()), col)
			for pi, pt := range c.Points {
				x, y, _ := p.Point(ci, pi)
				if ring := pt.Highlight; p.Ring != nil && p.Ring(ci, pi) || p.Ring == nil && ring {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" fill="none" stroke="#000" stroke-width="1.5"/>`+"\n", sx(x), sy(y))
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, sx(x), sy(y), col)
				if pt.Label != "" {
					// Points too close to label each may leave it to the
					// curve's name.
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`,
						sx(x)+5, sy(y)-5, col, html.EscapeString(pt.Label))
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
