package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// chartFromFile draws the growth chart of a JSON report.
func chartFromFile(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rs []*result
	if err := json.Unmarshal(b, &rs); err != nil {
		return fmt.Errorf("reading %s: %w", in, err)
	}
	return os.WriteFile(out, []byte(growthChart(rs)), 0o644)
}

// panel is one figure against the number of pods, with the goal it is
// held to.
type panel struct {
	title string
	value func(*result) float64
	goal  func(*result) float64 // nil: no goal line
	goalL string
}

var panels = []panel{
	{"manager RSS, peak (MiB)", func(r *result) float64 { return float64(r.RSSPeakBytes) / (1 << 20) },
		func(*result) float64 { return 150e6 / (1 << 20) }, "goal 150 MB"},
	{"full pass (s of reconcile time per sync)", func(r *result) float64 { return r.FullPassSeconds },
		func(r *result) float64 { return r.SyncPeriodSeconds }, "sync period"},
	{"CPU seconds per sync", func(r *result) float64 { return r.CPUSecondsPerSync }, nil, ""},
	{"API requests per sync", func(r *result) float64 { return r.APIRequestsPerSync }, nil, ""},
	{"kubelet pages read per sync", func(r *result) float64 { return r.ScrapesPerSync },
		func(r *result) float64 { return 2 * float64(r.Nodes) }, "2 x nodes (one read of both pages)"},
	{"policy status writes per sync", func(r *result) float64 { return r.StatusWritesPerSync },
		func(r *result) float64 { return float64(r.Policies) }, "policies"},
}

// growthChart draws each figure of the kubelet-source runs against the
// number of pods, one panel per figure, with its goal where it has one.
func growthChart(all []*result) string {
	var rs []*result
	for _, r := range all {
		// One manager's growth; a sharded run is in the table.
		if r.Source == "kubelet" && r.Shards <= 1 {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Pods < rs[j].Pods })
	const pw, ph, cols = 360, 220, 3
	rows := (len(panels) + cols - 1) / cols
	w, h := cols*pw+20, rows*ph+60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	title := "tailor manager at scale, kubelet source"
	if len(rs) > 0 {
		title += " (pods/nodes/policies:"
		for _, r := range rs {
			title += fmt.Sprintf(" %d/%d/%d", r.Pods, r.Nodes, r.Policies)
		}
		title += ")"
	}
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14">%s</text>`+"\n", title)
	if len(rs) > 0 {
		fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">%s</text>`+"\n", xmlEscape(rs[0].Machine))
	}
	if len(rs) == 0 {
		b.WriteString("</svg>\n")
		return b.String()
	}
	xmax := float64(rs[len(rs)-1].Pods)
	for i, p := range panels {
		ox, oy := 10+(i%cols)*pw, 50+(i/cols)*ph
		left, top, iw, ih := ox+50, oy+25, pw-80, ph-70
		ymax := 0.0
		for _, r := range rs {
			ymax = math.Max(ymax, p.value(r))
			if p.goal != nil {
				ymax = math.Max(ymax, p.goal(r))
			}
		}
		if ymax == 0 {
			ymax = 1
		}
		ymax = niceTop(ymax)
		x := func(pods float64) float64 { return float64(left) + pods/xmax*float64(iw) }
		y := func(v float64) float64 { return float64(top+ih) - v/ymax*float64(ih) }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", ox+10, oy+15, p.title)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+ih, left+iw, top+ih)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+ih)
		for k := 0; k <= 4; k++ {
			v := ymax * float64(k) / 4
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, y(v)+4, trimFloat(v))
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left+1, y(v), left+iw, y(v))
		}
		for _, r := range rs {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%dk</text>`+"\n", x(float64(r.Pods)), top+ih+14, r.Pods/1000)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">pods</text>`+"\n", left+iw/2, top+ih+28)
		if p.goal != nil {
			var pts []string
			for _, r := range rs {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(r.Pods)), y(p.goal(r))))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#c33" stroke-dasharray="4 3"/>`+"\n", strings.Join(pts, " "))
			last := rs[len(rs)-1]
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#c33">%s</text>`+"\n", x(float64(last.Pods)), y(p.goal(last))-4, p.goalL)
		}
		var pts []string
		for _, r := range rs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(r.Pods)), y(p.value(r))))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#1f5fbf" stroke-width="2"/>`+"\n", strings.Join(pts, " "))
		for _, r := range rs {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#1f5fbf"><title>%s</title></circle>`+"\n",
				x(float64(r.Pods)), y(p.value(r)), trimFloat(p.value(r)))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func niceTop(v float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*mag >= v {
			return m * mag
		}
	}
	return 10 * mag
}

func trimFloat(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
