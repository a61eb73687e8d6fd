package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tailorhq/tailor/internal/replay"
)

// The fixtures replay's own tests draw with: a series every five minutes
// from t0, and a policy provisioning the last sample seen.
var t0 = time.Date(2013, 7, 1, 0, 0, 0, 0, time.UTC)

func makeSeries(name string, span time.Duration, cpu, mem func(i int) float64) replay.Series {
	s := replay.Series{Name: name}
	for i := 0; time.Duration(i)*5*time.Minute <= span; i++ {
		s.Samples = append(s.Samples, replay.Sample{Time: t0.Add(time.Duration(i) * 5 * time.Minute), CPU: cpu(i), Memory: mem(i)})
	}
	return s
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

type lastSeen struct{}

func (lastSeen) Name() string                            { return "last" }
func (lastSeen) Start(*replay.Series) replay.Provisioner { return &lastState{} }

type lastState struct{ r replay.Resources }

func (l *lastState) Provisioned(time.Time) replay.Resources { return l.r }
func (l *lastState) Observe(s replay.Sample, _ replay.Resources) {
	l.r = replay.Resources{CPU: s.CPU, Memory: s.Memory}
}

func smallReport(t *testing.T) *replay.Report {
	t.Helper()
	s := makeSeries("7", 8*24*time.Hour, func(i int) float64 { return 1 + float64(i%50)/50 }, constant(1e9))
	rep, err := replay.Run([]replay.Series{s}, []replay.Policy{lastSeen{}, replay.Oracle{}}, replay.Options{Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour, Chart: []string{"7"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wellFormed fails unless the SVG parses as XML.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
}

func TestWriteChart(t *testing.T) {
	rep := smallReport(t)
	var b bytes.Buffer
	if err := WriteChart(&b, rep, "7"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	for _, want := range []string{">last<", ">usage<", "CPU [cores]", "memory [GiB]", "days after warm-up"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(svg, ">oracle<") {
		t.Errorf("chart draws the oracle, which is the usage itself")
	}
	if err := WriteChart(&b, rep, "nope"); err == nil {
		t.Errorf("chart of an unknown series: want an error")
	}
}

func TestWriteTradeoff(t *testing.T) {
	rep := smallReport(t)
	var b bytes.Buffer
	err := WriteTradeoff(&b, []Curve{{Name: "a", Points: []CurvePoint{{Label: "p1", Result: rep.Policies[0]}, {Label: "p2", Result: rep.Policies[1]}}}})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, b.String())
	if !strings.Contains(b.String(), ">p2<") {
		t.Errorf("trade-off chart lacks point labels")
	}
}

// A memory-only curve is drawn in the memory panel alone; a highlighted
// point is ringed.
func TestWriteTradeoffMemoryOnly(t *testing.T) {
	rep := smallReport(t)
	var b bytes.Buffer
	err := WriteTradeoff(&b, []Curve{
		{Name: "both", Points: []CurvePoint{{Label: "b1", Result: rep.Policies[0]}}},
		{Name: "mem", MemoryOnly: true, Points: []CurvePoint{{Label: "m1", Result: rep.Policies[1], Highlight: true}, {Result: rep.Policies[0]}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	if got := strings.Count(svg, ">b1<"); got != 2 {
		t.Errorf("a curve of both panels labelled %d times, want 2", got)
	}
	if got := strings.Count(svg, ">m1<"); got != 1 {
		t.Errorf("a memory-only curve labelled %d times, want 1", got)
	}
	if !strings.Contains(svg, `r="6" fill="none" stroke="#000"`) {
		t.Errorf("the highlighted point is not ringed")
	}
	if strings.Contains(svg, "></text>") {
		t.Errorf("an unlabelled point has an empty label")
	}
}

func TestWriteJSONSchema(t *testing.T) {
	rep := smallReport(t)
	var b bytes.Buffer
	if err := WriteJSON(&b, rep, true); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var keys [][]string
	for _, p := range got {
		var k []string
		for _, res := range []string{"cpu", "memory"} {
			for f := range p[res].(map[string]any) {
				k = append(k, res+"."+f)
			}
		}
		keys = append(keys, sortedStrings(k))
	}
	want := sortedStrings([]string{
		"cpu.provisionedOverUsed", "cpu.overPct", "cpu.overPctP90", "cpu.changesPerDay",
		"memory.provisionedOverUsed", "memory.overPct", "memory.overPctP90", "memory.changesPerDay",
	})
	if diff := cmp.Diff([][]string{want, want}, keys); diff != "" {
		t.Errorf("JSON figure keys (-want,+got):\n%s", diff)
	}
	if got[0]["policy"] != "last" || got[0]["perSeries"] == nil {
		t.Errorf("JSON lacks policy or perSeries: %v", got[0])
	}
}

func TestWriteTable(t *testing.T) {
	rep := smallReport(t)
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "oracle") || !strings.Contains(lines[2], "1.00x") {
		t.Errorf("table:\n%s", b.String())
	}
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestNiceAxis(t *testing.T) {
	type axis struct{ Top, Step float64 }
	cases := map[float64]axis{
		10.12: {12, 2},
		5.09:  {6, 1},
		0.114: {0.12, 0.02},
		3.36:  {4, 1},
		8:     {8, 2},
		0:     {1, 0.2},
		29.5:  {30, 5},
	}
	for v, want := range cases {
		top, step := niceAxis(v)
		if diff := cmp.Diff(want, axis{top, step}, cmpopts.EquateApprox(1e-9, 0)); diff != "" {
			t.Errorf("niceAxis(%v) (-want,+got):\n%s", v, diff)
		}
	}
}

func TestWriteMemoryTable(t *testing.T) {
	s := makeSeries("7", 8*24*time.Hour, constant(1), constant(1e9))
	rep, err := replay.Run([]replay.Series{s}, []replay.Policy{lastSeen{}, replay.Oracle{}}, replay.Options{Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour,
		Shapes: []replay.Shape{replay.LimitEqualsRequest, replay.RequestsOnly}, NodeMemory: []float64{4e9}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteMemoryTable(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// A heading and a row per shape and policy; no limit reads as such.
	if len(lines) != 5 || !strings.Contains(lines[1], "RequestsAndLimits 1x") || !strings.Contains(lines[4], "no limit") || !strings.Contains(lines[4], "oracle") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := WriteMemoryRows(&b, [2]string{"part", "policy"}, []MemoryRow{{Labels: [2]string{"odd", "oracle"}, Figures: rep.Memory(1, 0, replay.Subset{Series: func(string) bool { return true }})}}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(b.String()), "\n")
	if f := strings.Fields(lines[len(lines)-1]); len(lines) != 2 || !slices.Equal(f[len(f)-3:], []string{"0", "-", "0.00"}) {
		t.Errorf("rows (nodes are not the subset's to tell):\n%s", b.String())
	}
}

func TestWriteJSONShapes(t *testing.T) {
	s := makeSeries("7", 8*24*time.Hour, constant(1), constant(1e9))
	rep, err := replay.Run([]replay.Series{s}, []replay.Policy{lastSeen{}}, replay.Options{Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour, Shapes: []replay.Shape{replay.RequestsOnly}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, rep, false); err != nil {
		t.Fatalf("a shape without a limit must still encode: %v", err)
	}
	var got []replay.PolicyResult
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Shapes) != 1 || got[0].Shapes[0].Shape != "RequestsOnly" || got[0].Shapes[0].LimitsOverUsed != 0 {
		t.Errorf("JSON shapes: %+v", got)
	}
}
