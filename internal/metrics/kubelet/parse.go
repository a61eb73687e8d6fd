package kubelet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tailorhq/tailor/internal/metrics"
)

// point is one sample of a series, at the time the kubelet measured it.
type point struct {
	v float64
	t time.Time
}

// scrape is what one node's endpoint said, per container and metric name.
type scrape map[string]map[metrics.Key]point

// parse reads the Prometheus text format the kubelet serves, keeping the
// named metrics of real containers (the pod cgroup and the sandbox have an
// empty or "POD" container label). When a container has several series (a
// restarted container's old cgroup lingers in cAdvisor), the newest wins.
// keep, if not nil, says which namespaces' containers to keep. An error
// reading in is returned as it is, so that the caller can tell it from a
// page that does not parse.
func parse(in io.Reader, keep func(namespace string) bool, names ...string) (scrape, error) {
	text, err := linesOf(in, names)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(text)
	if err != nil {
		return nil, fmt.Errorf("parse metrics text: %w", err)
	}
	out := scrape{}
	for _, name := range names {
		fam, ok := families[name]
		if !ok {
			continue
		}
		series := map[metrics.Key]point{}
		for _, m := range fam.GetMetric() {
			key := keyOf(m)
			if key.Namespace == "" || key.Pod == "" || key.Container == "" || key.Container == "POD" {
				continue
			}
			if keep != nil && !keep(key.Namespace) {
				continue
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			var t time.Time
			if m.TimestampMs != nil {
				t = time.UnixMilli(m.GetTimestampMs())
			}
			if prev, seen := series[key]; seen && !t.After(prev.t) {
				continue
			}
			series[key] = point{v: v, t: t}
		}
		out[name] = series
	}
	return out, nil
}

func keyOf(m *dto.Metric) metrics.Key {
	var k metrics.Key
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "namespace":
			k.Namespace = l.GetValue()
		case "pod":
			k.Pod = l.GetValue()
		case "container":
			k.Container = l.GetValue()
		}
	}
	return k
}

// linesOf is the part of in the parser needs: the samples of the named
// families and their # HELP and # TYPE lines, read a line at a time. The
// parser builds every family it is given, and a cAdvisor page carries
// about 75 series per container of which the throttling read keeps 2: a
// 110-pod page parsed whole took 0.64 s and 40 MB of allocations, for
// every node in every share window, and 18 ms and 2 MB kept to the two
// (BenchmarkParseCadvisorPage). A line that is not a sample of a
// well-formed name is passed on, so that the parser still refuses a page
// that is not metrics (its line numbers then count the lines passed on).
func linesOf(in io.Reader, names []string) (*bytes.Buffer, error) {
	r := bufio.NewReaderSize(in, 64<<10)
	var out bytes.Buffer
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Longer than the buffer: the reader's cap bounds it.
			long := slices.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 && wanted(line, names) {
			out.Write(line)
			if line[len(line)-1] != '\n' {
				out.WriteByte('\n')
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return &out, nil
		case err != nil:
			return nil, err
		}
	}
}

// wanted says whether the parser needs line: a sample or a # HELP or
// # TYPE line of one of names, or a line that is neither a comment nor a
// sample of a well-formed name (the parser says what is wrong with it).
func wanted(line []byte, names []string) bool {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return false
	}
	if line[0] == '#' {
		fields := bytes.Fields(line)
		if len(fields) < 3 || (string(fields[1]) != "HELP" && string(fields[1]) != "TYPE") {
			return false
		}
		return slices.Contains(names, string(fields[2]))
	}
	end := bytes.IndexAny(line, "{ \t")
	if end < 0 {
		end = len(line)
	}
	name := line[:end]
	if !model.LegacyValidation.IsValidMetricName(string(name)) {
		return true
	}
	return slices.Contains(names, string(name))
}
