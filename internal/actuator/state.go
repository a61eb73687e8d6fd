package actuator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/podcontainers"
)

// State is where a pod's resize stands, as the kubelet reports it.
type State string

const (
	// StateDone: the kubelet has actuated the current spec.
	StateDone State = "Done"
	// StateProposed: the spec changed but the kubelet has not looked yet.
	StateProposed State = "Proposed"
	// StateDeferred: the node has no room now; the kubelet retries.
	StateDeferred State = "Pending-Deferred"
	// StateInfeasible: the node can never fit it; the kubelet gave up.
	StateInfeasible State = "Pending-Infeasible"
	// StateInProgress: the kubelet is applying it.
	StateInProgress State = "InProgress"
	// StateError: the kubelet tried and the runtime failed.
	StateError State = "Error"
)

// Observation is a pod's resize state with the kubelet's own words.
type Observation struct {
	State   State
	Reason  string
	Message string
	// Generation is the pod generation the observation speaks for: a
	// condition's own observedGeneration, else status.observedGeneration.
	// The kubelet stamps a Deferred condition with the new generation while
	// status.observedGeneration still names the old one.
	Generation int64
	// Pending lists containers whose reported resources still differ from
	// their spec, e.g. "app: cpu limit 500m (spec 1)".
	Pending []string
}

// Terminal reports whether waiting longer can change the outcome without
// someone acting: Done, Infeasible and Error are; Deferred is not, because
// the kubelet retries when room appears.
func (o Observation) Terminal() bool {
	return o.State == StateDone || o.State == StateInfeasible || o.State == StateError
}

// Observe reads a pod's resize state from its status alone. It relies on
// conditions, observedGeneration and status.resources, never on events: the
// kubelet has been seen emitting ResizeCompleted with the old values.
func Observe(pod *corev1.Pod) Observation {
	observed := pod.Status.ObservedGeneration
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		gen := c.ObservedGeneration
		if gen == 0 {
			gen = observed
		}
		var state State
		switch {
		case c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonInfeasible:
			state = StateInfeasible
		case c.Type == corev1.PodResizePending:
			state = StateDeferred
		case c.Type == corev1.PodResizeInProgress && c.Reason == corev1.PodReasonError:
			state = StateError
		case c.Type == corev1.PodResizeInProgress:
			state = StateInProgress
		default:
			continue
		}
		return Observation{State: state, Reason: c.Reason, Message: c.Message, Generation: gen}
	}
	if observed < pod.Generation {
		return Observation{State: StateProposed, Generation: observed, Message: fmt.Sprintf("kubelet has observed generation %d of %d", observed, pod.Generation)}
	}
	var pending []string
	check := func(name string, spec corev1.ResourceRequirements, actual *corev1.ResourceRequirements) {
		if actual == nil {
			pending = append(pending, name+": no resources reported")
			return
		}
		pending = append(pending, diffResources(name, spec, *actual)...)
	}
	for _, c := range pod.Spec.Containers {
		if st := statusOf(pod.Status.ContainerStatuses, c.Name); st != nil {
			check(c.Name, c.Resources, st.Resources)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		// Only sidecars run alongside the app; finished init containers keep
		// the resources they ran with.
		if !podcontainers.IsSidecar(&c) {
			continue
		}
		if st := statusOf(pod.Status.InitContainerStatuses, c.Name); st != nil {
			check(c.Name, c.Resources, st.Resources)
		}
	}
	if pod.Spec.Resources != nil && pod.Status.Resources != nil {
		pending = append(pending, diffResources("pod", *pod.Spec.Resources, *pod.Status.Resources)...)
	}
	if len(pending) > 0 {
		return Observation{State: StateInProgress, Generation: observed, Message: "waiting for the kubelet to report the new resources", Pending: pending}
	}
	return Observation{State: StateDone, Generation: observed}
}

func statusOf(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func diffResources(name string, spec, actual corev1.ResourceRequirements) []string {
	var out []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		for _, kind := range []struct {
			label        string
			spec, actual corev1.ResourceList
		}{{"request", spec.Requests, actual.Requests}, {"limit", spec.Limits, actual.Limits}} {
			s, sok := kind.spec[r]
			a, aok := kind.actual[r]
			if !sok {
				// The kubelet reports a default for unset values (e.g. a cpu
				// request of 2m on cgroup v1): only what the spec sets counts.
				continue
			}
			if !aok || s.Cmp(a) != 0 {
				got := "unset"
				if aok {
					got = a.String()
				}
				out = append(out, fmt.Sprintf("%s: %s %s %s (spec %s)", name, r, kind.label, got, s.String()))
			}
		}
	}
	return out
}
