package replay

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2013, 7, 1, 0, 0, 0, 0, time.UTC)

// makeSeries builds a series with one sample every 5 minutes for span.
func makeSeries(name string, span time.Duration, cpu, mem func(i int) float64) Series {
	s := Series{Name: name}
	for i := 0; time.Duration(i)*5*time.Minute <= span; i++ {
		s.Samples = append(s.Samples, Sample{Time: t0.Add(time.Duration(i) * 5 * time.Minute), CPU: cpu(i), Memory: mem(i)})
	}
	return s
}

// fixed provisions a constant amount from the start.
type fixed struct {
	name string
	r    Resources
}

func (f fixed) Name() string                    { return f.name }
func (f fixed) Start(*Series) Provisioner       { return f }
func (f fixed) Provisioned(time.Time) Resources { return f.r }
func (f fixed) Observe(Sample, Resources)       {}

// lastSeen provisions the previous sample: exactly right on a constant
// series, one step late on a changing one.
type lastSeen struct{}

func (lastSeen) Name() string              { return "last" }
func (lastSeen) Start(*Series) Provisioner { return &lastState{} }

type lastState struct{ r Resources }

func (l *lastState) Provisioned(time.Time) Resources { return l.r }
func (l *lastState) Observe(s Sample, _ Resources)   { l.r = Resources{CPU: s.CPU, Memory: s.Memory} }

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func TestRunAccounting(t *testing.T) {
	week := 7 * 24 * time.Hour
	opts := Options{Warmup: 24 * time.Hour, MinSpan: week}
	cases := map[string]struct {
		series   []Series
		policies []Policy
		want     []PolicyResult
	}{
		"always exactly right": {
			series:   []Series{makeSeries("a", week, constant(2), constant(1e9))},
			policies: []Policy{lastSeen{}, Oracle{}},
			want: []PolicyResult{
				{Policy: "last", Series: 1, CPU: Figures{ProvisionedOverUsed: 1}, Memory: Figures{ProvisionedOverUsed: 1}},
				{Policy: "oracle", Series: 1, CPU: Figures{ProvisionedOverUsed: 1}, Memory: Figures{ProvisionedOverUsed: 1}},
			},
		},
		"fleet ratio sums means, over% pools samples": {
			series: []Series{
				makeSeries("small", week, constant(1), constant(1e9)),
				makeSeries("big", week, constant(3), constant(1e9)),
			},
			policies: []Policy{fixed{"two", Resources{CPU: 2, Memory: 2e9}}},
			// (2+2)/(1+3) = 1; every "big" sample is over: half the pool.
			want: []PolicyResult{{Policy: "two", Series: 2,
				CPU:    Figures{ProvisionedOverUsed: 1, OverPct: 50, OverPctP90: 100},
				Memory: Figures{ProvisionedOverUsed: 2}}},
		},
		"warm-up is not counted": {
			// Usage is 10 during the first day only; a policy at 1 is
			// over only then, which the figures must not see.
			series: []Series{makeSeries("a", week, func(i int) float64 {
				if i < 288 {
					return 10
				}
				return 1
			}, constant(1e9))},
			policies: []Policy{fixed{"one", Resources{CPU: 1, Memory: 1e9}}},
			want:     []PolicyResult{{Policy: "one", Series: 1, CPU: Figures{ProvisionedOverUsed: 1}, Memory: Figures{ProvisionedOverUsed: 1}}},
		},
		"changes counted per series-day": {
			// Alternating usage: lastSeen changes at every sample after
			// the warm-up, 288 a day. Mean provisioned and mean used are
			// both 1.5, so the ratio is 1.
			series:   []Series{makeSeries("a", 8*24*time.Hour-5*time.Minute, func(i int) float64 { return float64(1 + i%2) }, constant(1e9))},
			policies: []Policy{lastSeen{}},
			want: []PolicyResult{{Policy: "last", Series: 1,
				CPU:    Figures{ProvisionedOverUsed: 1, OverPct: 50, OverPctP90: 50, ChangesPerDay: 288},
				Memory: Figures{ProvisionedOverUsed: 1}}},
		},
		"missing memory is not counted as zero use": {
			series: []Series{makeSeries("a", week, constant(1), func(i int) float64 {
				if i%2 == 0 {
					return math.NaN()
				}
				return 1e9
			})},
			policies: []Policy{fixed{"one", Resources{CPU: 1, Memory: 1e9}}},
			want:     []PolicyResult{{Policy: "one", Series: 1, CPU: Figures{ProvisionedOverUsed: 1}, Memory: Figures{ProvisionedOverUsed: 1}}},
		},
		"short series skipped": {
			series: []Series{
				makeSeries("a", week, constant(1), constant(1e9)),
				makeSeries("short", 3*24*time.Hour, constant(5), constant(5e9)),
			},
			policies: []Policy{fixed{"one", Resources{CPU: 1, Memory: 1e9}}},
			want:     []PolicyResult{{Policy: "one", Series: 1, CPU: Figures{ProvisionedOverUsed: 1}, Memory: Figures{ProvisionedOverUsed: 1}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep, err := Run(tc.series, tc.policies, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rep.Policies, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("figures (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestOpenLoop(t *testing.T) {
	// A step from 1 to 4 cores: a policy that only knows the past is over
	// exactly once, at the step; the oracle never.
	s := makeSeries("a", 7*24*time.Hour, func(i int) float64 {
		if i < 1000 {
			return 1
		}
		return 4
	}, constant(1e9))
	rep, err := Run([]Series{s}, []Policy{lastSeen{}, Oracle{}}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := []int{rep.Series[0].Policies[0].CPU.Over, rep.Series[0].Policies[1].CPU.Over}
	if diff := cmp.Diff([]int{1, 0}, got); diff != "" {
		t.Errorf("samples over (-want,+got):\n%s", diff)
	}
}

func TestDouble(t *testing.T) {
	s := makeSeries("a", 7*24*time.Hour, func(i int) float64 {
		if i == 500 {
			return 3.5
		}
		return 1
	}, constant(1e9))
	s.CPUCapacity, s.MemoryCapacity = 2, 4e9
	p := NewDouble().Start(&s)
	for _, smp := range s.Samples {
		p.Observe(smp, p.Provisioned(smp.Time))
	}
	// 3.5 > 0.8*2 doubles to 4, and at the next tick 3.5 > 0.8*4 to 8;
	// it never comes down.
	if diff := cmp.Diff(Resources{CPU: 8, Memory: 4e9}, p.Provisioned(t0)); diff != "" {
		t.Errorf("double (-want,+got):\n%s", diff)
	}
}

const bbHeader = "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]\n"

func TestReadBitbrains(t *testing.T) {
	in := bbHeader +
		"1372629900;\t2;\t5000.0;\t1250.0;\t25.0;\t4194304.0;\t1048576.0;\t0;\t0;\t0;\t0\n" +
		// Off: every value 0.
		"1372630200;\t0;\t0;\t0;\t0;\t0;\t0;\t0;\t0;\t0;\t0\n" +
		// Memory 0 while running: not measured.
		"1372630500;\t2;\t5000.0;\t2500.0;\t50.0;\t4194304.0;\t0;\t1;\t0;\t0;\t0\n" +
		// Repeated timestamp: the first is kept.
		"1372630500;\t2;\t5000.0;\t5000.0;\t100.0;\t4194304.0;\t2048;\t0;\t0;\t0;\t0\n" +
		// Booting: no CPU capacity yet.
		"1372630800;\t0;\t0;\t0;\t0;\t4194304.0;\t2048;\t0;\t0;\t0;\t0\n"
	got, err := Read(strings.NewReader(in), "1.csv", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := Series{
		CPUCapacity: 2, MemoryCapacity: 4194304 * 1024, MemoryLimit: 4194304 * 1024,
		Samples: []Sample{
			{Time: time.Unix(1372629900, 0).UTC(), CPU: 0.5, Memory: 1 << 30},
			{Time: time.Unix(1372630500, 0).UTC(), CPU: 1, Memory: math.NaN()},
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("series (-want,+got):\n%s", diff)
	}
}

func TestReadCSV(t *testing.T) {
	in := "timestamp,cpu,memory\n" +
		"2026-01-01T00:05:00Z,0.5,\n" +
		"1767225600,0.25,1000\n"
	got, err := Read(strings.NewReader(in), "x.csv", FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	want := Series{Samples: []Sample{
		{Time: time.Unix(1767225600, 0).UTC(), CPU: 0.25, Memory: 1000},
		{Time: time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC), CPU: 0.5, Memory: math.NaN()},
	}}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("series (-want,+got):\n%s", diff)
	}
}

func TestReadErrors(t *testing.T) {
	cases := map[string]struct {
		format  Format
		in      string
		wantErr string
	}{
		"csv bad cpu":          {FormatCSV, "1,abc,1\n", "x:1: cpu cores: want a non-negative number"},
		"csv wrong columns":    {FormatCSV, "1,2\n", "x:1: want 3 columns"},
		"csv negative memory":  {FormatCSV, "t,c,m\n1,1,-5\n", "x:2: memory bytes"},
		"bitbrains no header":  {FormatBitbrains, "1;2;3\n", "x:1: bitbrains header expected"},
		"bitbrains short row":  {FormatBitbrains, bbHeader + "1;\t2\n", "x:2: want 11"},
		"bitbrains bad number": {FormatBitbrains, bbHeader + "1;\t2;\tx;\t1;\t1;\t1;\t1;\t0;\t0;\t0;\t0\n", "x:2: column 3"},
		"unknown format":       {"xml", "a\n", `x:1: unknown trace format "xml"`},
		"empty":                {FormatAuto, "", "x:1: empty file"},
		"garbage first line":   {FormatAuto, "aGVsbG8gd29ybGQ=\n", `x:1: not a CSV trace: want a header or rows of 3 columns (timestamp,cpu cores,memory bytes), got 1 in "aGVsbG8gd29ybGQ="`},
		"garbage after header": {FormatCSV, "t,c,m\nlorem ipsum\n", `x:2: want 3 columns (timestamp,cpu cores,memory bytes), got 1 in "lorem ipsum"`},
		"a line too long":      {FormatAuto, strings.Repeat("x", maxLine+1), "x:1: a line longer than 1048576 bytes: not a text trace"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in), "x", tc.format)
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Read() error = %v, want a ParseError containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadPathsGzipAndDir(t *testing.T) {
	dir := t.TempDir()
	plain := "1,1,1\n2,1,1\n"
	if err := os.WriteFile(filepath.Join(dir, "10.csv"), []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "2.csv.gz"), gzipped(t, plain), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPaths([]string{dir}, FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
		if len(s.Samples) != 2 {
			t.Errorf("series %s has %d samples, want 2", s.Name, len(s.Samples))
		}
	}
	if diff := cmp.Diff([]string{"2", "10"}, names); diff != "" {
		t.Errorf("series order (-want,+got):\n%s", diff)
	}
	if _, err := ReadPaths([]string{filepath.Join(dir, "missing.csv")}, FormatCSV); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file error = %v, want it to name the file", err)
	}
}

func TestHindsight(t *testing.T) {
	// Usage 1, with a 5 in the second hour: an hourly hindsight policy
	// provisions 5 for that hour only and is never over.
	s := makeSeries("a", 8*24*time.Hour, func(i int) float64 {
		if i == 24*12+15 {
			return 5
		}
		return 1
	}, constant(1e9))
	p := Hindsight{Window: time.Hour}.Start(&s)
	var got []float64
	for _, smp := range s.Samples[24*12 : 24*12+36] {
		got = append(got, p.Provisioned(smp.Time).CPU)
	}
	want := make([]float64, 36)
	for i := range want {
		want[i] = 1
		if i >= 12 && i < 24 {
			want[i] = 5
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("provisioned (-want,+got):\n%s", diff)
	}
}
