package printing

import corev1 "k8s.io/api/core/v1"

// Qty is r's quantity in l as kubectl writes it, or "-" when l has none.
func Qty(l corev1.ResourceList, r corev1.ResourceName) string {
	if q, ok := l[r]; ok {
		return q.String()
	}
	return "-"
}

// OrDash is s, or "-" for an empty cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
