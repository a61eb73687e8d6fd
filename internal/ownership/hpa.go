package ownership

import (
	"fmt"
	"sort"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Holds names the requests tailor must keep as they are because a
// HorizontalPodAutoscaler divides usage by them: an HPA scaling on a
// resource's Utilization reads usage / request, so a request tailor moved
// would move the HPA's signal, and each would chase the other. For such a
// resource tailor sizes only the limit (under RequestsAndLimits: the
// recommendation at the pod's limit-to-request ratio, never below the
// request), so throttling and OOM kills are still answered while the HPA
// sees the request it was tuned for.
type Holds struct {
	// All holds a resource's request in every container and the pod-level
	// resources: an HPA Resource metric divides the pod's total usage by
	// its total request.
	All map[corev1.ResourceName]bool
	// Containers holds a resource's request in one container: an HPA
	// ContainerResource metric divides that container's usage by its
	// request.
	Containers map[string]map[corev1.ResourceName]bool
	// Why says which HPA holds what, for the policy's status.
	Why string
}

// Holds reports whether the request of r in the named container is held.
func (h Holds) Holds(container string, r corev1.ResourceName) bool {
	return h.All[r] || h.Containers[container][r]
}

// Empty reports whether nothing is held.
func (h Holds) Empty() bool { return len(h.All) == 0 && len(h.Containers) == 0 }

// HPAHolds finds the HorizontalPodAutoscalers among hpas (those of the
// policy's namespace) that scale one of workloads, and what their
// Utilization metrics hold. workloads are a targetRef policy's target and
// the owners of the policy's pods (Workloads): a selector policy's pods
// are held for an HPA of their Deployment as a targetRef policy's are.
// Metrics of type AverageValue or Value, and Pods, Object and External
// metrics, do not read requests: they hold nothing. The second result
// describes every HPA found, held or not, for the status; empty when none
// scales the workloads.
func HPAHolds(workloads []Workload, hpas []autoscalingv2.HorizontalPodAutoscaler) (Holds, string) {
	var h Holds
	var found, held []string
	for i := range hpas {
		hpa := &hpas[i]
		t := hpa.Spec.ScaleTargetRef
		if !Chain(workloads).Reaches(WorkloadOf(t.APIVersion, t.Kind, t.Name)) {
			continue
		}
		found = append(found, hpa.Name)
		for _, m := range hpa.Spec.Metrics {
			switch {
			case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
				m.Resource.Target.Type == autoscalingv2.UtilizationMetricType:
				if h.All == nil {
					h.All = map[corev1.ResourceName]bool{}
				}
				h.All[m.Resource.Name] = true
				held = append(held, fmt.Sprintf("HorizontalPodAutoscaler %s scales on %s utilization%s", hpa.Name, m.Resource.Name, percent(m.Resource.Target)))
			case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil &&
				m.ContainerResource.Target.Type == autoscalingv2.UtilizationMetricType:
				cr := m.ContainerResource
				if h.Containers == nil {
					h.Containers = map[string]map[corev1.ResourceName]bool{}
				}
				if h.Containers[cr.Container] == nil {
					h.Containers[cr.Container] = map[corev1.ResourceName]bool{}
				}
				h.Containers[cr.Container][cr.Name] = true
				held = append(held, fmt.Sprintf("HorizontalPodAutoscaler %s scales on container %s's %s utilization%s", hpa.Name, cr.Container, cr.Name, percent(cr.Target)))
			}
		}
	}
	if len(found) == 0 {
		return h, ""
	}
	sort.Strings(found)
	if len(held) == 0 {
		return h, fmt.Sprintf("HorizontalPodAutoscaler %s scales the workload on metrics that do not read requests: tailor sizes it as usual", strings.Join(found, ", "))
	}
	var names []string
	for r := range h.All {
		names = append(names, string(r))
	}
	for c, rs := range h.Containers {
		for r := range rs {
			names = append(names, fmt.Sprintf("%s of container %s", r, c))
		}
	}
	sort.Strings(names)
	h.Why = strings.Join(held, "; ") + ": tailor keeps the " + strings.Join(names, ", ") +
		" requests it divides usage by and sizes only those limits (a container without a limit keeps its values); other resources are sized as usual"
	return h, h.Why
}

func percent(t autoscalingv2.MetricTarget) string {
	if t.AverageUtilization == nil {
		return ""
	}
	return fmt.Sprintf(" (%d%%)", *t.AverageUtilization)
}
