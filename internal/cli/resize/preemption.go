package resize

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/featuregate"
	"github.com/tailorhq/tailor/internal/preemption"
	"github.com/tailorhq/tailor/internal/resize"
)

// Gate states of the scheduler's preemption for resizes, as the report
// says them.
const (
	gateOn      = "on"
	gateOff     = "off"
	gateUnknown = "unknown"
)

// PreemptionReport is what the scheduler would do with a resize the
// kubelet defers, where Kubernetes 1.37's preemption for resizes
// (InPlacePodVerticalScalingSchedulerPreemption) may be on.
type PreemptionReport struct {
	// Gate is on, off or unknown, and GateSource how tailor knows.
	Gate       string `json:"gate"`
	GateSource string `json:"gateSource"`
	// Reason and Victims are the prediction, when the gate is not off.
	Reason  preemption.Reason  `json:"reason,omitempty"`
	Victims []PreemptionVictim `json:"victims,omitempty"`
	Message string             `json:"message"`
}

// PreemptionVictim is a pod the scheduler would evict.
type PreemptionVictim struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Priority     int32  `json:"priority"`
	BreaksBudget bool   `json:"breaksBudget,omitempty"`
}

// preempts reports whether the scheduler is known to be on and would evict
// someone for the resize.
func (r *PreemptionReport) preempts() bool {
	return r != nil && r.Gate == gateOn && len(r.Victims) > 0
}

// preemptionOf predicts what the scheduler does with pod's resize, which
// the kubelet would defer, on node; the strings are what could not be read.
func (o *ResizeOptions) preemptionOf(ctx context.Context, server actuator.Server, node *corev1.Node, ns *resize.NodeState, plan *resize.Result) (*PreemptionReport, []string) {
	if !server.Version.AtLeast(37) {
		return &PreemptionReport{Gate: gateOff, GateSource: fmt.Sprintf("Kubernetes %s has no scheduler preemption for resizes (1.37 and later, feature gate %s)", server.Version, preemption.Gate),
			Message: "nobody is preempted; the kubelet retries when room appears"}, nil
	}
	gate := featuregate.Read(ctx, o.clients.Discovery.RESTClient(), preemption.Gate)
	out := &PreemptionReport{Gate: gateUnknown, GateSource: gate.Why}
	switch {
	case gate.Known && !gate.Enabled:
		out.Gate, out.Message = gateOff, "nobody is preempted; the kubelet retries when room appears"
		return out, nil
	case gate.Known:
		out.Gate = gateOn
	}
	var warnings []string
	var budgets policyv1.PodDisruptionBudgetList
	if err := o.clients.Client.List(ctx, &budgets); err != nil {
		warnings = append(warnings, fmt.Sprintf("PodDisruptionBudgets not read (%v): the preemption predicted counts none", err))
	}
	pred := preemption.Predict(preemption.Input{Pod: plan.AfterPod(), Node: node, Pods: ns.Pods, Budgets: budgets.Items, Now: o.now()})
	out.Reason, out.Message = pred.Reason, pred.Message
	for _, v := range pred.Victims {
		out.Victims = append(out.Victims, PreemptionVictim{Namespace: v.Pod.Namespace, Name: v.Pod.Name, Priority: schedhelper.PodPriority(v.Pod), BreaksBudget: v.BreaksBudget})
	}
	return out, warnings
}

// printPreemption says what the scheduler would do with a deferred resize.
func printPreemption(out io.Writer, p *PreemptionReport) {
	switch p.Gate {
	case gateOn:
		fmt.Fprintf(out, "scheduler preemption for resizes: on (%s): %s\n", p.GateSource, p.Message)
	case gateOff:
		fmt.Fprintf(out, "scheduler preemption for resizes: off (%s): %s\n", p.GateSource, p.Message)
	default:
		fmt.Fprintf(out, "scheduler preemption for resizes: unknown (%s); if feature gate %s is on: %s\n", p.GateSource, preemption.Gate, p.Message)
	}
}
