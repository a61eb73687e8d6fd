package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tailorhq/tailor/bench/vpa"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/replay"
	"github.com/tailorhq/tailor/internal/replay/render"
)

// setting is one point of an idea's sweep.
type setting struct {
	label string
	cfg   recommend.Config
}

// family is an idea swept over its knob.
type family struct {
	name     string
	settings []setting
}

// direction is a way to split the trace for validation: tune on one half,
// score on the other.
type direction struct {
	name          string
	tune, heldOut replay.Subset
}

var directions = []direction{
	{"tune 1st half, score 2nd", halves[0].sub, halves[1].sub},
	{"tune 2nd half, score 1st", halves[1].sub, halves[0].sub},
	{"tune odd VMs, score even", halves[2].sub, halves[3].sub},
	{"tune even VMs, score odd", halves[3].sub, halves[2].sub},
}

// ideaFamilies are the ideas of issue 26 part 2, each swept over its knob
// from tailor before the issue (memory as one value), which each idea
// changes alone: the split, now the default, is one of them.
func ideaFamilies() []family {
	def := oneValue()
	with := func(f func(*recommend.Config)) recommend.Config {
		cfg := def
		f(&cfg)
		return cfg
	}
	split := family{name: "split"}
	for _, h := range []time.Duration{4 * time.Hour, 8 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour} {
		split.settings = append(split.settings, setting{"request hold " + shortHours(h), with(func(c *recommend.Config) {
			c.MemorySplit, c.MemoryRequestHold = true, h
		})})
	}
	// Without the daily profile the limit is the 48-hour window's peak
	// plus the margin.
	flat := family{name: "split, no profile"}
	for _, h := range []time.Duration{8 * time.Hour, 24 * time.Hour, 48 * time.Hour} {
		flat.settings = append(flat.settings, setting{"request hold " + shortHours(h), with(func(c *recommend.Config) {
			c.MemorySplit, c.MemoryRequestHold, c.MemoryProfile = true, h, false
		})})
	}
	// The margin from the workload's own noise (the decaying mean
	// sample-to-sample change) instead of the least margin of 256 MiB.
	vol := family{name: "volatility"}
	for _, m := range []struct{ least, noise float64 }{{0, 2}, {0, 4}, {0, 8}, {64 << 20, 4}} {
		vol.settings = append(vol.settings, setting{fmt.Sprintf("least %gMi, noise x%g", m.least/(1<<20), m.noise), with(func(c *recommend.Config) {
			c.MemoryMinMargin, c.MemoryJitterMargin = m.least, m.noise
		})})
	}
	// Both: the request from the typical peak, the limit's margin from
	// the noise.
	both := family{name: "split + volatility"}
	for _, m := range []struct{ least, noise float64 }{{0, 2}, {0, 4}} {
		both.settings = append(both.settings, setting{fmt.Sprintf("request hold 24h, least %gMi, noise x%g", m.least/(1<<20), m.noise), with(func(c *recommend.Config) {
			c.MemorySplit, c.MemoryRequestHold = true, 24*time.Hour
			c.MemoryMinMargin, c.MemoryJitterMargin = m.least, m.noise
		})})
	}
	return []family{split, flat, vol, both}
}

// shortHours writes 24h0m0s as 24h.
func shortHours(d time.Duration) string { return fmt.Sprintf("%gh", d.Hours()) }

// validate replays every idea's sweep beside VPA and tailor before issue
// 26 (tailor-1value, the ideas' baseline), picks each idea's setting on the
// tuning half of each direction (the cheapest requests with no more OOM
// kills and no more evictions than VPA there) and prints what that pick
// does on the held-out half.
func validate(series []replay.Series, opts replay.Options, w io.Writer, out string) error {
	opts.Chart = nil
	base, err := replay.NewTailor("tailor-1value", oneValue())
	if err != nil {
		return err
	}
	policies := []replay.Policy{vpa.New(), base}
	fams := ideaFamilies()
	for _, f := range fams {
		for _, s := range f.settings {
			p, err := replay.NewTailor(f.name+" "+s.label, s.cfg)
			if err != nil {
				return err
			}
			policies = append(policies, p)
		}
	}
	rep, err := replay.Run(series, policies, opts)
	if err != nil {
		return err
	}
	// Every figure on every half, for the record.
	if err := writeFile(filepath.Join(out, "validate.txt"), func(f *os.File) error {
		var rows []render.MemoryRow
		for si, sh := range rep.Shapes {
			for pi, p := range rep.Policies {
				rows = append(rows, render.MemoryRow{Labels: [2]string{sh.Name + " whole", p.Policy}, Figures: rep.Memory(pi, si, replay.Subset{})})
				for _, h := range halves {
					rows = append(rows, render.MemoryRow{Labels: [2]string{sh.Name + " " + h.name, p.Policy}, Figures: rep.Memory(pi, si, h.sub)})
				}
			}
		}
		return render.WriteMemoryRows(f, [2]string{"shape, half", "policy"}, rows)
	}); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nheld-out validation (each idea's setting picked on the tuning half: the cheapest requests with no more OOM kills and evictions than vpa there; every figure in %s):\n", filepath.Join(out, "validate.txt"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "shape\tdirection\tidea\tpick\ttuning: requests/vpa\tkills (vpa)\tevictions (vpa)\theld-out: requests/vpa\tkills (vpa)\tevictions (vpa)\tkill%% p90 (vpa)\tgoal\t\n")
	picks := map[[3]int]bool{} // policy, shape, direction
	next := 2
	for _, f := range fams {
		first := next
		next += len(f.settings)
		for si, sh := range rep.Shapes {
			for di, d := range directions {
				vt, vh := rep.Memory(0, si, d.tune), rep.Memory(0, si, d.heldOut)
				pick := pickOn(rep, si, d.tune, 0, first, next)
				label, goal := "none as safe as vpa: tailor-1value shown", "-"
				if pick < 0 {
					// Nothing as safe as VPA: the baseline stands.
					pick = 1
				} else {
					label, goal = f.settings[pick-first].label, "no"
				}
				picks[[3]int{pick, si, di}] = true
				pt, ph := rep.Memory(pick, si, d.tune), rep.Memory(pick, si, d.heldOut)
				if goal == "no" && meetsGoal(ph, vh) {
					goal = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%d (%d)\t%.2f (%.2f)\t%.3f\t%d (%d)\t%.2f (%.2f)\t%.2f%% (%.2f%%)\t%s\t\n",
					sh.Name, d.name, f.name, label,
					pt.RequestsOverUsed/vt.RequestsOverUsed, pt.OOMKills, vt.OOMKills, pt.Evictions, vt.Evictions,
					ph.RequestsOverUsed/vh.RequestsOverUsed, ph.OOMKills, vh.OOMKills, ph.Evictions, vh.Evictions, ph.OOMKillPctP90, vh.OOMKillPctP90, goal)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeFile(filepath.Join(out, "heldout.svg"), func(f *os.File) error {
		return writeHeldOutChart(f, rep, fams, picks)
	})
}

// pickOn is the policy among [first, next) with the cheapest requests on
// sub under shape si among those with no more OOM kills and no more
// evictions there than policy ref; -1 when none is as safe.
func pickOn(rep *replay.Report, si int, sub replay.Subset, ref, first, next int) int {
	r := rep.Memory(ref, si, sub)
	pick, cheapest := -1, 0.0
	for pi := first; pi < next; pi++ {
		f := rep.Memory(pi, si, sub)
		if f.OOMKills > r.OOMKills || f.Evictions > r.Evictions {
			continue
		}
		if pick < 0 || f.RequestsOverUsed < cheapest {
			pick, cheapest = pi, f.RequestsOverUsed
		}
	}
	return pick
}

// meetsGoal is issue 26's goal for memory: requests at most 0.8x VPA's at
// no more OOM kills and no more evictions.
func meetsGoal(f, vpa replay.MemoryFigures) bool {
	return f.RequestsOverUsed <= 0.8*vpa.RequestsOverUsed && f.OOMKills <= vpa.OOMKills && f.Evictions <= vpa.Evictions
}

// writeHeldOutChart draws each idea's sweep on the held-out halves of the
// time split under the first shape: requests against OOM kills, VPA and
// tailor before issue 26 as single points, each direction's pick ringed.
func writeHeldOutChart(w io.Writer, rep *replay.Report, fams []family, picks map[[3]int]bool) error {
	// Policy indices per curve: VPA, the baseline, then each family's.
	idx := [][]int{{0}, {1}}
	curves := []render.Curve{{Name: "vpa"}, {Name: "tailor-1value (before issue 26)"}}
	next := 2
	for _, f := range fams {
		c := render.Curve{Name: f.name}
		var is []int
		for _, s := range f.settings {
			c.Points = append(c.Points, render.CurvePoint{Label: strings.TrimPrefix(s.label, "request hold ")})
			is = append(is, next)
			next++
		}
		curves = append(curves, c)
		idx = append(idx, is)
	}
	curves[0].Points = []render.CurvePoint{{}}
	curves[1].Points = []render.CurvePoint{{}}
	var panels []render.TradeoffPanel
	for di := range 2 {
		held := directions[di].heldOut
		panels = append(panels, render.TradeoffPanel{
			Title: fmt.Sprintf("held-out %s (ringed: picked on the other half)", halves[1-di].name),
			Point: func(ci, pi int) (float64, float64, bool) {
				f := rep.Memory(idx[ci][pi], 0, held)
				return f.OOMKillPct, f.RequestsOverUsed, true
			},
			Ring: func(ci, pi int) bool { return ci >= 2 && picks[[3]int{idx[ci][pi], 0, di}] },
		})
	}
	return render.WriteTradeoffChart(w, render.TradeoffChart{
		Title:  fmt.Sprintf("Memory on held-out time (%s): requests against OOM kills (lower left is better)", rep.Shapes[0].Name),
		XLabel: "samples over the limit (OOM kills)", YLabel: "requests / used",
		Curves: curves, Panels: panels,
	})
}
