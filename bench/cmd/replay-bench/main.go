// Command replay-bench replays a month of real VM usage through tailor's
// recommender, the seeds' doubling rule, the upstream VPA recommender and an
// oracle in one run, prints the comparison, writes charts, and fails when a
// figure leaves the range recorded for it in ranges.json.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tailorhq/tailor/bench/vpa"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/replay"
	"github.com/tailorhq/tailor/internal/replay/render"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	traces := flag.String("traces", "", "directory (or comma-separated files) of Bitbrains traces")
	ranges := flag.String("ranges", "ranges.json", "recorded figure ranges to check; empty to skip the check")
	out := flag.String("out", "out", "directory for charts and the JSON report")
	charts := flag.String("chart-series", "60,253,231", "comma-separated series to chart: 60 runs batch jobs, 253 is steady, 231 peaks every day at 20:00 UTC")
	curve := flag.Bool("curve", false, "also sweep tailor's look-back windows and VPA's safety margin and chart the trade-off, and sweep the memory request's share of the tail against VPA's margin and chart requests against evictions (about 5x the run time)")
	packings := flag.Int("packings", 4, "how many times each node size is packed, the pods placed in another order each time; evictions and nodes are the mean")
	output := flag.String("o", "table", "output format on stdout: table or json")
	seriesTable := flag.Bool("series-table", false, "also print every series under every policy")
	vpaOOM := flag.Bool("vpa-oom", false, "also replay VPA fed with an OOM kill whenever memory went over its target")
	vms := flag.String("vms", "all", "which VMs to replay by the parity of their number: all, odd or even (tune on one half, score on the other)")
	nodeGiB := flag.String("node-memory", "64,32", "comma-separated memory of the simulated nodes, GiB: the containers are packed onto nodes of each size by their requests, one packing per size, and a node whose summed usage passes its memory evicts; the first size is the one the main tables show")
	limitRatio := flag.Float64("limit-ratio", 2, "the limit-to-request ratio of the second RequestsAndLimits shape, scored beside RequestsAndLimits 1x (limit = request) and RequestsOnly (the VM's memory as the limit)")
	validateIdeas := flag.Bool("validate", false, "also sweep each memory idea's knob, pick on the tuning half of each split and print the held-out figures (about 2 minutes of CPU)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close() // a profile cut short is still read
		}()
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("-o %q is not one of table, json", *output)
	}
	if *traces == "" {
		return fmt.Errorf("--traces is required, e.g. --traces ../../shared/traces/bitbrains-rnd/2013-7")
	}
	start := time.Now()
	series, err := replay.ReadPaths(strings.Split(*traces, ","), replay.FormatBitbrains)
	if err != nil {
		return err
	}
	if series, err = byParity(series, *vms); err != nil {
		return err
	}
	read := time.Since(start)
	tailor, err := replay.NewTailor("tailor", recommend.DefaultConfig())
	if err != nil {
		return err
	}
	opts := replay.DefaultOptions()
	opts.Shapes = []replay.Shape{replay.LimitEqualsRequest, replay.LimitRatioShape(*limitRatio), replay.RequestsOnly}
	nodeSizes, err := parseNodeSizes(*nodeGiB)
	if err != nil {
		return err
	}
	opts.NodeMemory = nodeSizes
	if *packings < 1 {
		return fmt.Errorf("--packings %d: pack at least once", *packings)
	}
	opts.Packings = *packings
	opts.Chart = splitList(*charts)
	if *vms != "all" {
		// A half holds only some of the charted series.
		opts.Chart = slices.DeleteFunc(opts.Chart, func(c string) bool {
			return !slices.ContainsFunc(series, func(s replay.Series) bool { return s.Name == c })
		})
	}
	// tailor before issue 26: memory as one value, the request, with the
	// limit derived from it at the pod's ratio (MemorySplit off).
	tailor1, err := replay.NewTailor("tailor-1value", oneValue())
	if err != nil {
		return err
	}
	// tailor as it was before the daily memory profile (issue 14): one
	// value, the 48-hour memory peak held whatever the hour.
	noProfile := oneValue()
	noProfile.MemoryProfile = false
	tailor48h, err := replay.NewTailor("tailor-48h", noProfile)
	if err != nil {
		return err
	}
	policies := []replay.Policy{tailor, tailor1, tailor48h, vpa.New(), replay.NewDouble(), replay.Oracle{}}
	for _, w := range []time.Duration{time.Hour, 3 * time.Hour, 24 * time.Hour} {
		policies = append(policies, replay.Hindsight{Window: w})
	}
	if *vpaOOM {
		v := vpa.New()
		v.OOMs = true
		policies = append(policies, v)
	}
	rep, err := replay.Run(series, policies, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d series read, %d usable (%d spanning under %v skipped); read %v, replayed %v\n\n",
		len(series), len(rep.Series), len(rep.Skipped), opts.MinSpan, read.Round(time.Millisecond), (time.Since(start) - read).Round(time.Millisecond))
	if *output == "json" {
		err = render.WriteJSON(os.Stdout, rep, *seriesTable)
	} else {
		fmt.Println("memory as one value, the request (over: samples above it; for tailor, whose limit is sized apart, not OOM kills):")
		err = render.WriteTable(os.Stdout, rep)
		for ni, m := range rep.NodeMemory {
			if err == nil {
				fmt.Printf("\nmemory as Kubernetes charges it (requests reserved, OOM kills at the limit, evictions on %g GiB nodes):\n", m/(1<<30))
				err = render.WriteMemoryTable(os.Stdout, rep, ni)
			}
		}
		if err == nil {
			err = writeValidation(os.Stdout, rep)
		}
		if err == nil {
			err = writeEvictions(os.Stdout, rep)
		}
		if err == nil && *seriesTable {
			fmt.Println()
			err = render.WriteSeriesTable(os.Stdout, rep)
		}
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*out, "report.json"), func(f *os.File) error { return render.WriteJSON(f, rep, false) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*out, "memory.json"), func(f *os.File) error { return writeMemoryJSON(f, rep) }); err != nil {
		return err
	}
	for _, s := range opts.Chart {
		if err := writeFile(filepath.Join(*out, "series-"+s+".svg"), func(f *os.File) error { return render.WriteChart(f, rep, s) }); err != nil {
			return err
		}
	}
	if *curve {
		// The sweep's table goes with the main one, unless stdout is JSON.
		w := io.Writer(os.Stdout)
		if *output == "json" {
			w = os.Stderr
		}
		if err := tradeoff(series, *out, w); err != nil {
			return err
		}
		if err := evictionTradeoff(series, opts, *out, w); err != nil {
			return err
		}
	}
	if *validateIdeas {
		w := io.Writer(os.Stdout)
		if *output == "json" {
			w = os.Stderr
		}
		if err := validate(series, opts, w, *out); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "\ncharts and report.json in %s (total %v)\n", *out, time.Since(start).Round(time.Millisecond))
	if *ranges == "" {
		return nil
	}
	spec, err := loadRanges(*ranges)
	if err != nil {
		return err
	}
	if errs := spec.check(rep); len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "\nfigures out of their recorded range (%s):\n", *ranges)
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "  %s\n", e)
		}
		return fmt.Errorf("%d figures out of range", len(errs))
	}
	fmt.Fprintf(os.Stderr, "all figures within the ranges in %s\n", *ranges)
	return nil
}

// oneValue is recommend.DefaultConfig() as it was before issue 26: memory
// as one value that sizes the request, the limit derived from it. The
// baselines the memory ideas are measured against start from it.
func oneValue() recommend.Config {
	cfg := recommend.DefaultConfig()
	cfg.MemorySplit = false
	return cfg
}

// byParity keeps the series whose name is an odd or an even number; "all"
// keeps every series.
func byParity(series []replay.Series, vms string) ([]replay.Series, error) {
	if vms == "all" {
		return series, nil
	}
	if vms != "odd" && vms != "even" {
		return nil, fmt.Errorf("--vms %q is not one of all, odd, even", vms)
	}
	var kept []replay.Series
	for _, s := range series {
		n, err := strconv.Atoi(s.Name)
		if err != nil {
			return nil, fmt.Errorf("--vms %s: series %q is not named by a number", vms, s.Name)
		}
		if (n%2 == 1) == (vms == "odd") {
			kept = append(kept, s)
		}
	}
	return kept, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// tradeoff sweeps tailor's margins and VPA's safety margin in one replay
// and charts both curves, for where the goal's single point is not reached.
func tradeoff(series []replay.Series, out string, w io.Writer) error {
	var policies []replay.Policy
	// With the daily profile, how fast it forgets (and how long a peak is
	// held whatever the hour) is the one value's main memory knob between
	// cost and safety (issue 14); the default fade is one of these points.
	// Swept with memory as one value, as when it was chosen: the single
	// value's figures of a split would score its request as the limit.
	def := oneValue()
	fades := []float64{0.95, 0.97, 0.975, def.ProfileFade, 0.99}
	profileCurve := render.Curve{
		Name:       fmt.Sprintf("tailor-1value: memory profile fading %v a day, right to left (ringed: default)", fades),
		MemoryOnly: true,
	}
	for _, fade := range fades {
		cfg := oneValue()
		cfg.ProfileFade = fade
		pol, err := replay.NewTailor(fmt.Sprintf("tailor-1value fade %g", fade), cfg)
		if err != nil {
			return err
		}
		policies = append(policies, pol)
		profileCurve.Points = append(profileCurve.Points, render.CurvePoint{Highlight: fade == def.ProfileFade})
	}
	// Without the profile the look-back windows are the knob: a longer
	// window remembers more peaks. This is the curve before issue 14.
	tailorCurve := render.Curve{Name: "tailor-48h: no profile (cpu/memory look-back)"}
	for _, w := range []struct{ cpu, mem time.Duration }{
		{15 * time.Minute, 24 * time.Hour},
		{20 * time.Minute, 36 * time.Hour},
		{30 * time.Minute, 48 * time.Hour},
		{time.Hour, 72 * time.Hour},
		{2 * time.Hour, 96 * time.Hour},
	} {
		cfg := oneValue()
		cfg.MemoryProfile = false
		cfg.CPUWindow, cfg.MemoryWindow = w.cpu, w.mem
		label := fmt.Sprintf("%gm/%gh", w.cpu.Minutes(), w.mem.Hours())
		p, err := replay.NewTailor("tailor-48h at "+label, cfg)
		if err != nil {
			return err
		}
		policies = append(policies, p)
		tailorCurve.Points = append(tailorCurve.Points, render.CurvePoint{Label: label})
	}
	vpaCurve := render.Curve{Name: "vpa (safety margin)"}
	for _, m := range []float64{0, 0.15, 0.3, 0.6, 1} {
		policies = append(policies, vpa.NewWithMargin(m))
		vpaCurve.Points = append(vpaCurve.Points, render.CurvePoint{Label: fmt.Sprintf("margin %g", m)})
	}
	// Policies that know each window's peak in advance: how low a policy
	// that resizes that often could go without ever being over.
	hindCurve := render.Curve{Name: "hindsight (knows the window's peak)"}
	for _, w := range []time.Duration{time.Hour, 3 * time.Hour, 24 * time.Hour} {
		policies = append(policies, replay.Hindsight{Window: w})
		hindCurve.Points = append(hindCurve.Points, render.CurvePoint{Label: fmt.Sprintf("%gh", w.Hours())})
	}
	rep, err := replay.Run(series, policies, replay.DefaultOptions())
	if err != nil {
		return err
	}
	next := 0
	for _, c := range []*render.Curve{&profileCurve, &tailorCurve, &vpaCurve, &hindCurve} {
		for i := range c.Points {
			c.Points[i].Result = rep.Policies[next]
			next++
		}
	}
	fmt.Fprintf(w, "\ntrade-off sweep:\n")
	if err := render.WriteTable(w, rep); err != nil {
		return err
	}
	return writeFile(filepath.Join(out, "tradeoff.svg"), func(f *os.File) error {
		return render.WriteTradeoff(f, []render.Curve{profileCurve, tailorCurve, vpaCurve, hindCurve})
	})
}

// evictionTradeoff sweeps how much of its tail tailor's memory request
// reserves (MemoryRequestTailShare, 0 being the default) against VPA's
// safety margin, and charts requests against node-pressure evictions under
// every shape on every node size: where tailor's default has more
// evictions than VPA, how much request it would take to have no more.
func evictionTradeoff(series []replay.Series, opts replay.Options, out string, w io.Writer) error {
	opts.Chart = nil
	shares := []float64{0, 0.2, 0.4, 0.6, 0.8, 1}
	tailorCurve := render.Curve{Name: fmt.Sprintf("tailor: request at least %v of the limit's tail (ringed: default)", shares)}
	var policies []replay.Policy
	for _, sh := range shares {
		cfg := recommend.DefaultConfig()
		cfg.MemoryRequestTailShare = sh
		p, err := replay.NewTailor(fmt.Sprintf("tailor tail share %g", sh), cfg)
		if err != nil {
			return err
		}
		policies = append(policies, p)
		tailorCurve.Points = append(tailorCurve.Points, render.CurvePoint{Label: fmt.Sprintf("%g", sh), Highlight: sh == 0})
	}
	margins := []float64{0, 0.15, 0.3, 0.6, 1}
	vpaCurve := render.Curve{Name: "vpa: safety margin (ringed: default 0.15)"}
	for _, m := range margins {
		policies = append(policies, vpa.NewWithMargin(m))
		vpaCurve.Points = append(vpaCurve.Points, render.CurvePoint{Label: fmt.Sprintf("%g", m), Highlight: m == 0.15})
	}
	rep, err := replay.Run(series, policies, opts)
	if err != nil {
		return err
	}
	ref := len(shares) + slices.Index(margins, 0.15)
	fmt.Fprintf(w, "\neviction trade-off (requests and OOM kills are the whole month's; evictions the mean over %d packings; requests relative to vpa at its default margin):\n", rep.Packings)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "shape\tpolicy\trequests/vpa\tOOM kills")
	for _, m := range rep.NodeMemory {
		fmt.Fprintf(tw, "\tevictions %gGi", m/(1<<30))
	}
	fmt.Fprintf(tw, "\t\n")
	for si, sh := range rep.Shapes {
		v := rep.Memory(ref, si, replay.Subset{})
		for pi, p := range rep.Policies {
			f := rep.Memory(pi, si, replay.Subset{})
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%d", sh.Name, p.Policy, f.RequestsOverUsed/v.RequestsOverUsed, f.OOMKills)
			for ni := range rep.NodeMemory {
				fmt.Fprintf(tw, "\t%s", render.EvictionsText(rep.Memory(pi, si, replay.Subset{Node: ni}).Evictions))
			}
			fmt.Fprintf(tw, "\t\n")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var panels []render.TradeoffPanel
	for ni, m := range rep.NodeMemory {
		for si, sh := range rep.Shapes {
			panels = append(panels, render.TradeoffPanel{
				Title: fmt.Sprintf("%s, %g GiB nodes", sh.Name, m/(1<<30)),
				Point: func(ci, pi int) (float64, float64, bool) {
					if ci == 1 {
						pi += len(shares)
					}
					f := rep.Memory(pi, si, replay.Subset{Node: ni})
					return f.Evictions, f.RequestsOverUsed, true
				},
			})
		}
	}
	return writeFile(filepath.Join(out, "evictions-tradeoff.svg"), func(f *os.File) error {
		return render.WriteTradeoffChart(f, render.TradeoffChart{
			Title:  fmt.Sprintf("Memory requests against node-pressure evictions, the month (mean of %d packings; lower left is better)", rep.Packings),
			XLabel: "evictions", YLabel: "requests / used", XCount: true,
			Curves: []render.Curve{tailorCurve, vpaCurve}, Panels: panels,
		})
	})
}

// writeValidation prints each learning policy's memory on each half of the
// trace, by time (before and after the split) and by VM (odd and even
// numbers), under each shape: what a setting tuned on one half does on the
// other.
func writeValidation(w io.Writer, rep *replay.Report) error {
	fmt.Fprintf(w, "\nvalidation halves (time split at %s; VMs by the parity of their number):\n", rep.Split.Format(time.RFC3339))
	var rows []render.MemoryRow
	for si, sh := range rep.Shapes {
		for pi, p := range rep.Policies {
			if !learns(p.Policy) {
				continue
			}
			for _, h := range halves {
				rows = append(rows, render.MemoryRow{Labels: [2]string{sh.Name + " " + h.name, p.Policy}, Figures: rep.Memory(pi, si, h.sub)})
			}
		}
	}
	return render.WriteMemoryRows(w, [2]string{"shape, half", "policy"}, rows)
}

// writeEvictions prints each learning policy's node-pressure evictions on
// every node size, on the month and on each validation half: whether a
// request is eviction-safe depends on the nodes it shares.
func writeEvictions(w io.Writer, rep *replay.Report) error {
	if len(rep.NodeMemory) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nnode-pressure evictions by node size (the kubelet's order, evicted pods recreated elsewhere):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "shape\tpart")
	var pis []int
	for pi, p := range rep.Policies {
		if learns(p.Policy) {
			pis = append(pis, pi)
		}
	}
	for _, m := range rep.NodeMemory {
		for _, pi := range pis {
			fmt.Fprintf(tw, "\t%s %gGi", rep.Policies[pi].Policy, m/(1<<30))
		}
	}
	fmt.Fprintf(tw, "\t\n")
	for si, sh := range rep.Shapes {
		for _, part := range append([]half{{"whole", replay.Subset{}}}, halves...) {
			fmt.Fprintf(tw, "%s\t%s", sh.Name, part.name)
			for ni := range rep.NodeMemory {
				for _, pi := range pis {
					sub := part.sub
					sub.Node = ni
					fmt.Fprintf(tw, "\t%s", render.EvictionsText(rep.Memory(pi, si, sub).Evictions))
				}
			}
			fmt.Fprintf(tw, "\t\n")
		}
	}
	return tw.Flush()
}

// parseNodeSizes reads --node-memory: GiB, comma-separated, into bytes.
func parseNodeSizes(list string) ([]float64, error) {
	var sizes []float64
	for _, f := range splitList(list) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("--node-memory %q: %q is not a positive number of GiB", list, f)
		}
		sizes = append(sizes, v*(1<<30))
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("--node-memory %q: give at least one node size in GiB, e.g. 64,32", list)
	}
	return sizes, nil
}

// partName is how memory.json and ranges.json name a part of the trace on
// a node size: the part's own name on the first size, and with the size
// after it on the others ("whole on 32 GiB nodes").
func partName(part string, rep *replay.Report, node int) string {
	if node == 0 {
		return part
	}
	return fmt.Sprintf("%s on %g GiB nodes", part, rep.NodeMemory[node]/(1<<30))
}

// writeMemoryJSON writes every policy's memory figures by shape and part
// of the trace ("whole" and the validation halves, on each node size), in
// the layout of the shapes in ranges.json.
func writeMemoryJSON(w io.Writer, rep *replay.Report) error {
	out := map[string]map[string]map[string]replay.MemoryFigures{}
	for pi, p := range rep.Policies {
		out[p.Policy] = map[string]map[string]replay.MemoryFigures{}
		for si, sh := range rep.Shapes {
			parts := map[string]replay.MemoryFigures{}
			for ni := range max(len(rep.NodeMemory), 1) {
				for _, h := range append([]half{{"whole", replay.Subset{}}}, halves...) {
					sub := h.sub
					sub.Node = ni
					parts[partName(h.name, rep, ni)] = rep.Memory(pi, si, sub)
				}
			}
			for k, f := range parts {
				if math.IsInf(f.LimitsOverUsed, 0) {
					f.LimitsOverUsed = 0
					parts[k] = f
				}
			}
			out[p.Policy][sh.Name] = parts
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// learns reports whether a policy learns from the past, and so can be
// tuned on one half and scored on the other.
func learns(name string) bool {
	return !strings.HasPrefix(name, "hindsight") && name != "oracle" && name != "double"
}

// half is one half of the trace for validation.
type half struct {
	name string
	sub  replay.Subset
}

var halves = []half{
	{"1st half", replay.Subset{Half: 1}},
	{"2nd half", replay.Subset{Half: 2}},
	{"odd VMs", replay.Subset{Series: func(n string) bool { return parity(n) == 1 }}},
	{"even VMs", replay.Subset{Series: func(n string) bool { return parity(n) == 0 }}},
}

// parity is a series' number mod 2, or -1 for a name that is no number.
func parity(name string) int {
	n, err := strconv.Atoi(name)
	if err != nil {
		return -1
	}
	return n % 2
}
