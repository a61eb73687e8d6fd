package status

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/test/builder"
)

func TestStatusTable(t *testing.T) {
	pod := builder.Pod("web").Node("n1").
		Sidecar(builder.Container("proxy").Requests("100m", "")).
		Container(builder.Container("app").Requests("500m", "128Mi").Limits("1", "256Mi")).
		QOS(corev1.PodQOSBurstable).Running().Obj()
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Resources: &corev1.ResourceRequirements{Requests: builder.List("100m", "")}}}
	pod.Spec.Containers[0].Resources.Limits = builder.List("2", "256Mi")
	pod.Generation, pod.Status.ObservedGeneration = 2, 2
	var out bytes.Buffer
	if err := printStatus(&out, []PodStatus{podStatus(pod)}, "", false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"proxy (sidecar)", "500m/2", "500m/1", "InProgress"} {
		if !strings.Contains(got, want) {
			t.Errorf("status table lacks %q:\n%s", want, got)
		}
	}
}
