package featuregate

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Gate is what the apiserver says of one of its feature gates.
type Gate struct {
	// Known is false when the apiserver could not be asked (no right to
	// read its /metrics) or does not name the gate.
	Known, Enabled bool
	// Answered is true when the apiserver's /metrics was read: a gate it does
	// not name then does not exist on this server.
	Answered bool
	// Why says how it was found out, or why not.
	Why string
}

// Read reads gate from the apiserver's own
// kubernetes_feature_enabled metric: the one place a client can see the
// gates a cluster runs with. The apiserver's gate stands for the cluster's:
// a gate that spans components (as a resize's preemption spans the
// apiserver, the scheduler and the kubelet) is set on all of them.
// Reading /metrics needs the get verb on that non-resource URL, which
// cluster-admin and system:monitoring have.
func Read(ctx context.Context, rc rest.Interface, gate string) Gate {
	if rc == nil {
		return Gate{Why: "the apiserver's feature gates cannot be read from this client"}
	}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return Gate{Why: fmt.Sprintf("cannot read the apiserver's /metrics for its feature gates: %v", err)}
	}
	return gateFrom(raw, gate)
}

// gateFrom finds gate in the text of an apiserver's /metrics.
func gateFrom(raw []byte, gate string) Gate {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return Gate{Why: fmt.Sprintf("the apiserver's /metrics could not be read: %v", err)}
	}
	if f, ok := families["kubernetes_feature_enabled"]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == gate {
					// A gauge, or untyped where the page leaves its TYPE out.
					on := m.GetGauge().GetValue() == 1 || m.GetUntyped().GetValue() == 1
					state := "off"
					if on {
						state = "on"
					}
					return Gate{Known: true, Enabled: on, Answered: true, Why: fmt.Sprintf("the apiserver reports feature gate %s %s", gate, state)}
				}
			}
		}
	}
	return Gate{Answered: true, Why: fmt.Sprintf("the apiserver does not report feature gate %s (a server before it existed)", gate)}
}
