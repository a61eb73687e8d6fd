package fleet

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/builder/policyspec"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

var spec = policyspec.New

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func ptr[T any](v T) *T { return &v }

func burstable() *builder.ContainerWrapper {
	return builder.Container("app").Requests("250m", "128Mi").Limits("500m", "256Mi")
}

var v137 = resize.Version{Major: 1, Minor: 37}

func nodeState(cpu, memory string, pods ...*corev1.Pod) *resize.NodeState {
	return &resize.NodeState{Allocatable: builder.List(cpu, memory), Pods: pods}
}

func sent(d PolicyDecision) []string {
	var out []string
	for _, a := range d.Resizes {
		out = append(out, a.Pod.Name+" "+describeDesired(a.Decision))
	}
	return out
}

func held(d PolicyDecision) []string {
	var out []string
	for _, h := range d.Held {
		out = append(out, h.Pod.Name+" "+string(h.Reason))
	}
	return out
}

func describeDesired(d podchange.Decision) string {
	s := ""
	for _, ch := range d.All() {
		s += fmt.Sprintf("%s.%s=%s;", ch.Container, ch.Resource, ch.RequestNow.String())
	}
	return s
}
