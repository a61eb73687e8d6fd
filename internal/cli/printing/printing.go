package printing

import corev1 "k8s.io/api/core/v1"

// Qty is l's r as people write it, "-" when l has none: an unset value is
// shown as absent, not as zero, which would read as a limit of nothing.
func Qty(l corev1.ResourceList, r corev1.ResourceName) string {
	if q, ok := l[r]; ok {
		return q.String()
	}
	return "-"
}

// ReqLim is a container's request and limit of r as "request/limit".
func ReqLim(rr corev1.ResourceRequirements, r corev1.ResourceName) string {
	return Qty(rr.Requests, r) + "/" + Qty(rr.Limits, r)
}

// OrDash is s, or "-" when it is empty, so a table's columns stay aligned.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
