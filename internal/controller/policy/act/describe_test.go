package act

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/podchange"
)

// TestDescribe: the text of a resize's event and log line says what moved;
// a memory limit raised alone (the tail outgrew it) names the limit first
// and the request as kept, not "request 64Mi -> 64Mi".
func TestDescribe(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	d := podchange.Decision{Changes: []podchange.Change{
		{Container: "app", Resource: corev1.ResourceCPU, RequestBefore: *q("100m"), RequestNow: *q("200m"), LimitBefore: q("200m"), LimitNow: q("400m")},
		{Container: "app", Resource: corev1.ResourceMemory, RequestBefore: *q("64Mi"), RequestNow: *q("64Mi"), LimitBefore: q("128Mi"), LimitNow: q("295Mi"),
			Notes: []string{"limit sized apart from the request, from the tail of usage: 295Mi"}},
		{Container: "side", Resource: corev1.ResourceMemory, RequestBefore: *q("32Mi"), RequestNow: *q("48Mi")},
	}}
	want := "app cpu request 100m -> 200m, limit 200m -> 400m; " +
		"app memory limit 128Mi -> 295Mi, request 64Mi kept (limit sized apart from the request, from the tail of usage: 295Mi); " +
		"side memory request 32Mi -> 48Mi"
	if got := describe(d); got != want {
		t.Errorf("describe:\n got %q\nwant %q", got, want)
	}
}
