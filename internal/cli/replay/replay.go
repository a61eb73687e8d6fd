package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/replay"
	"github.com/tailorhq/tailor/internal/replay/render"
)

// ReplayOptions are the inputs of `tailor replay`.
type ReplayOptions struct {
	Paths       []string
	Format      string
	Output      string
	SeriesTable bool
	ChartDir    string
	ChartSeries []string
	Warmup      time.Duration
	MinSpan     time.Duration

	streams  genericiooptions.IOStreams
	policies []replay.Policy
}

// NewCommand is `tailor replay`. It reads files, not the cluster, so it
// takes no kubeconfig flags.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	def := replay.DefaultOptions()
	o := &ReplayOptions{streams: streams, Format: string(replay.FormatAuto), Output: "table", Warmup: def.Warmup, MinSpan: def.MinSpan}
	cmd := &cobra.Command{
		Use:   "replay [--format auto|bitbrains|csv] FILE|DIR...",
		Short: "Replay usage traces through tailor's recommender and compare it with other policies",
		Long: `Replay recorded usage, open loop, through tailor's default recommender, the
seeds' doubling rule and an oracle that knows the next sample, and print how
much each provisioned per unit used and how often usage went over. For memory
that is the request: tailor sizes the limit apart (from the tail, where the
kernel kills), so a sample over its request is not an OOM kill.

Traces are Bitbrains GWA-T-12 files or CSV rows "timestamp,cpu cores,memory
bytes" (Unix seconds or RFC 3339; empty memory means not measured), plain or
gzipped. A directory stands for the .csv and .csv.gz files in it.`,
		Example: `  tailor replay --format csv my-app.csv
  tailor replay -o json ../shared/traces/bitbrains-rnd/2013-7
  tailor replay --chart-dir charts --chart-series 60 ../shared/traces/bitbrains-rnd/2013-7`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", o.Format, "trace format: auto, bitbrains or csv")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: table or json")
	f.BoolVar(&o.SeriesTable, "series-table", false, "also print every series under every policy")
	f.StringVar(&o.ChartDir, "chart-dir", "", "write an SVG chart per --chart-series into this directory")
	f.StringSliceVar(&o.ChartSeries, "chart-series", nil, "series (file names without .csv[.gz]) to chart")
	f.DurationVar(&o.Warmup, "warmup", o.Warmup, "time at the start of each series left out of the figures")
	f.DurationVar(&o.MinSpan, "min-span", o.MinSpan, "skip series spanning less than this")
	return cmd
}

// Complete fills in what the flags leave implicit.
func (o *ReplayOptions) Complete(args []string) error {
	o.Paths = args
	tailor, err := replay.NewTailor("tailor", recommend.DefaultConfig())
	if err != nil {
		return err
	}
	o.policies = []replay.Policy{tailor, replay.NewDouble(), replay.Oracle{}}
	return nil
}

// Validate rejects a command line that cannot work, saying what to change.
func (o *ReplayOptions) Validate() error {
	if len(o.Paths) == 0 {
		return exit.Usagef("replay needs at least one trace FILE or DIR")
	}
	if !slices.Contains(replay.Formats, replay.Format(o.Format)) {
		return exit.Usagef("--format %q is not one of auto, bitbrains, csv", o.Format)
	}
	if o.Output != "table" && o.Output != "json" {
		return exit.Usagef("-o %q is not one of table, json", o.Output)
	}
	if o.Warmup < 0 || o.MinSpan < 0 {
		return exit.Usagef("--warmup and --min-span must not be negative")
	}
	if len(o.ChartSeries) > 0 && o.ChartDir == "" {
		return exit.Usagef("--chart-series needs --chart-dir to write the charts to")
	}
	for _, p := range o.Paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return exit.Usagef("trace %s does not exist", p)
		}
	}
	return nil
}

// Run reads the traces, replays them and prints the figures.
func (o *ReplayOptions) Run() error {
	series, err := replay.ReadPaths(o.Paths, replay.Format(o.Format))
	if err != nil {
		return err
	}
	rep, err := replay.Run(series, o.policies, replay.Options{Warmup: o.Warmup, MinSpan: o.MinSpan, Chart: o.ChartSeries})
	if err != nil {
		return exit.WithCode(exit.Usage, err)
	}
	// A short series is left out because its figures would be the
	// recommender's warm-up, not its judgement; but the user who gave it
	// is told which, how long each was, and how to keep it.
	skipped := skippedText(series, rep.Skipped)
	if len(rep.Series) == 0 {
		return fmt.Errorf("all %d series are too short to judge: each must span at least --min-span %v and more than --warmup %v (%s); replay shorter traces with smaller --min-span and --warmup, e.g. --min-span 0 --warmup 1h",
			len(series), o.MinSpan, o.Warmup, skipped)
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(o.streams.ErrOut, "warning: skipped %d of %d series spanning less than --min-span %v or no more than --warmup %v (%s); lower them to replay these too\n",
			len(rep.Skipped), len(series), o.MinSpan, o.Warmup, skipped)
	}
	if o.Output == "json" {
		err = render.WriteJSON(o.streams.Out, rep, o.SeriesTable)
	} else {
		// tailor sizes the memory limit apart from the request (the
		// default since issue 26): the memory columns score the request,
		// and a sample over it is not an OOM kill.
		fmt.Fprintln(o.streams.Out, "memory as one value, the request (over: samples above it; tailor's limit is sized apart, so not OOM kills: make bench scores kills at the limit):")
		err = render.WriteTable(o.streams.Out, rep)
		if err == nil && o.SeriesTable {
			fmt.Fprintln(o.streams.Out)
			err = render.WriteSeriesTable(o.streams.Out, rep)
		}
	}
	if err != nil {
		return err
	}
	for _, s := range o.ChartSeries {
		if err := os.MkdirAll(o.ChartDir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(o.ChartDir, "series-"+s+".svg")
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = render.WriteChart(f, rep, s)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing chart %s: %w", path, err)
		}
		fmt.Fprintf(o.streams.ErrOut, "wrote %s\n", path)
	}
	return nil
}

// skippedText names the skipped series with their spans, the first few
// only: a directory of traces may skip hundreds.
func skippedText(series []replay.Series, skipped []string) string {
	const shown = 5
	spans := make(map[string]string, len(series))
	for i := range series {
		s := &series[i]
		switch len(s.Samples) {
		case 0:
			spans[s.Name] = "no samples"
		case 1:
			spans[s.Name] = "1 sample"
		default:
			spans[s.Name] = "spans " + spanText(s.Span())
		}
	}
	var parts []string
	for i, name := range skipped {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(skipped)-shown))
			break
		}
		parts = append(parts, name+": "+spans[name])
	}
	return strings.Join(parts, ", ")
}

// spanText writes a trace's span as a person reads it: days for long ones.
func spanText(d time.Duration) string {
	if d >= 24*time.Hour {
		return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
	}
	return d.Round(time.Second).String()
}
