package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/tailorhq/tailor/internal/replay"
)

// WriteTable prints the fleet figures, one row per policy.
func WriteTable(w io.Writer, rep *replay.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "policy\tseries\tcpu prov/used\tcpu over%%\tcpu over%% p90\tcpu changes/day\tmem prov/used\tmem over%%\tmem over%% p90\tmem changes/day\t\n")
	for _, p := range rep.Policies {
		fmt.Fprintf(tw, "%s\t%d\t%.2fx\t%.2f%%\t%.2f%%\t%.2f\t%.2fx\t%.3f%%\t%.2f%%\t%.2f\t\n",
			p.Policy, p.Series,
			p.CPU.ProvisionedOverUsed, p.CPU.OverPct, p.CPU.OverPctP90, p.CPU.ChangesPerDay,
			p.Memory.ProvisionedOverUsed, p.Memory.OverPct, p.Memory.OverPctP90, p.Memory.ChangesPerDay)
	}
	return tw.Flush()
}

// WriteMemoryTable prints memory as Kubernetes charges it: for each shape
// replayed, one row per policy, with evictions and nodes on the node size
// indexed node in Report.NodeMemory.
func WriteMemoryTable(w io.Writer, rep *replay.Report, node int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "shape\tpolicy\tmem requests/used\tlimits/used\tover request%%\tOOM kills\tkill%%\tkill%% p90\tevictions\tnodes\tchanges/day\t\n")
	for si := range rep.Shapes {
		for pi, p := range rep.Policies {
			writeMemoryRow(tw, rep.Shapes[si].Name, p.Policy, rep.Memory(pi, si, replay.Subset{Node: node}))
		}
	}
	return tw.Flush()
}

// writeMemoryRow prints one row of memory figures after two labels.
func writeMemoryRow(w io.Writer, a, b string, f replay.MemoryFigures) {
	nodes := "-"
	if f.Nodes > 0 {
		nodes = fmt.Sprintf("%.1f", f.Nodes)
	}
	fmt.Fprintf(w, "%s\t%s\t%.2fx\t%s\t%.3f%%\t%d\t%.3f%%\t%.2f%%\t%s\t%s\t%.2f\t\n",
		a, b, f.RequestsOverUsed, ratioText(f.LimitsOverUsed), f.OverRequestPct, f.OOMKills, f.OOMKillPct, f.OOMKillPctP90, EvictionsText(f.Evictions), nodes, f.ChangesPerDay)
}

// WriteMemoryRows prints labelled rows of memory figures under the
// memory table's heading, for a caller's own selection (validation halves).
func WriteMemoryRows(w io.Writer, heads [2]string, rows []MemoryRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t%s\tmem requests/used\tlimits/used\tover request%%\tOOM kills\tkill%%\tkill%% p90\tevictions\tnodes\tchanges/day\t\n", heads[0], heads[1])
	for _, r := range rows {
		writeMemoryRow(tw, r.Labels[0], r.Labels[1], r.Figures)
	}
	return tw.Flush()
}

// MemoryRow is one row for WriteMemoryRows.
type MemoryRow struct {
	Labels  [2]string
	Figures replay.MemoryFigures
}

// EvictionsText prints a mean number of evictions: whole when it is
// (one packing), else to two decimals.
func EvictionsText(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratioText(v float64) string {
	if math.IsInf(v, 1) {
		return "no limit"
	}
	return fmt.Sprintf("%.2fx", v)
}

// WriteSeriesTable prints every series under every policy.
func WriteSeriesTable(w io.Writer, rep *replay.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "series\tpolicy\tdays\tcpu mean used\tcpu prov/used\tcpu over%%\tcpu changes\tmem mean used [MiB]\tmem prov/used\tmem over%%\tmem changes\t\n")
	for _, s := range rep.Series {
		for i, p := range s.Policies {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.3f\t%.2fx\t%.2f%%\t%d\t%.0f\t%.2fx\t%.3f%%\t%d\t\n",
				s.Name, rep.Policies[i].Policy, p.CPU.Days,
				meanUsed(p.CPU), p.CPU.Ratio(), p.CPU.OverPct(), p.CPU.Changes,
				meanUsed(p.Memory)/(1<<20), p.Memory.Ratio(), p.Memory.OverPct(), p.Memory.Changes)
		}
	}
	return tw.Flush()
}

func meanUsed(t replay.Tally) float64 {
	if t.Samples == 0 {
		return 0
	}
	return t.SumUsed / float64(t.Samples)
}

// SeriesFigures is one series under one policy in JSON output.
type SeriesFigures struct {
	Series string       `json:"series"`
	CPU    SeriesFigure `json:"cpu"`
	Memory SeriesFigure `json:"memory"`
}

// SeriesFigure is one resource of one series under one policy.
type SeriesFigure struct {
	ProvisionedOverUsed float64 `json:"provisionedOverUsed"`
	OverPct             float64 `json:"overPct"`
	Changes             int     `json:"changes"`
	Days                float64 `json:"days"`
}

type jsonPolicy struct {
	replay.PolicyResult
	PerSeries []SeriesFigures `json:"perSeries,omitempty"`
}

// WriteJSON prints one object per policy; perSeries adds each policy's
// per-series figures.
func WriteJSON(w io.Writer, rep *replay.Report, perSeries bool) error {
	out := make([]jsonPolicy, len(rep.Policies))
	for i, p := range rep.Policies {
		out[i].PolicyResult = p
		out[i].Shapes = nil
		for _, f := range p.Shapes {
			f.LimitsOverUsed = finite(f.LimitsOverUsed)
			out[i].Shapes = append(out[i].Shapes, f)
		}
		if !perSeries {
			continue
		}
		for _, s := range rep.Series {
			sp := s.Policies[i]
			out[i].PerSeries = append(out[i].PerSeries, SeriesFigures{
				Series: s.Name,
				CPU:    SeriesFigure{ProvisionedOverUsed: finite(sp.CPU.Ratio()), OverPct: sp.CPU.OverPct(), Changes: sp.CPU.Changes, Days: sp.CPU.Days},
				Memory: SeriesFigure{ProvisionedOverUsed: finite(sp.Memory.Ratio()), OverPct: sp.Memory.OverPct(), Changes: sp.Memory.Changes, Days: sp.Memory.Days},
			})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// finite keeps JSON encodable: a series that used nothing has no ratio.
func finite(v float64) float64 {
	if v > 1e300 {
		return 0
	}
	return v
}
