// Package ownership answers who else has a say over a pod before tailor
// sizes it: which of the namespace's policies claims it (ClaimedBy, through
// its controller chain or labels), whether a VerticalPodAutoscaler acting
// on its workload leaves it to that one (VPAOn), and which requests a
// HorizontalPodAutoscaler divides usage by and so must stay (HPAHolds).
// These are answered from the pod's owners and the namespace's objects
// alone, before any sizing, so the packages that size a pod depend on this
// one and never the reverse.
package ownership
