package kubelet

import (
	"bytes"
	"fmt"
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
// keep, if not nil, says which namespaces' containers to keep.
func parse(raw []byte, keep func(namespace string) bool, names ...string) (scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(raw))
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
