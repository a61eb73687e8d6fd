//go:build controller

package controller

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// A DaemonSet on two kinds of node, two of each: a log shipper uses 1500m
// and 700Mi on the big nodes and 40m and 90Mi on the small ones. Learnt
// per class, by a label or by the nodes' size, the policy says two
// recommendations, the workload's is the big class's, and each pod is
// resized in place to its own class's: the big nodes' pods raised, the
// small nodes' lowered, none to the other class's size. The checkpoint
// keeps each class's state apart; new pods are left to the sync, which
// status.admission says.
func TestDaemonSetSizedPerNodeClass(t *testing.T) {
	const typ = "node.kubernetes.io/instance-type"
	for _, tc := range []struct {
		name, label, small, big string
	}{
		{name: "by a label", label: typ, small: "m5.large", big: "m5.16xlarge"},
		{name: "by size", small: "4cpu-16Gi", big: "64cpu-256Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{})
			selector, template := e.poolTemplate("shipper")
			ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "shipper"}, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}}
			if err := apiClient.Create(e.ctx, ds); err != nil {
				t.Fatalf("create daemonset: %v", err)
			}
			usage := map[string][2]float64{"small": {0.04, 90 * mi}, "big": {1.5, 700 * mi}}
			for _, kind := range []string{"small", "big"} {
				for i := range 2 {
					w := builder.Node(fmt.Sprintf("%s-%d-%s", kind, i, e.ns)).Ready(corev1.ConditionTrue)
					if kind == "small" {
						w.Allocatable("3920m", "15Gi").Label(typ, "m5.large")
					} else {
						w.Allocatable("63", "250Gi").Label(typ, "m5.16xlarge")
					}
					node := e.addNodeFrom(w)
					pod := fmt.Sprintf("shipper-%s-%d", kind, i)
					e.pod("shipper", builder.Pod(pod).Node(node).Owner("DaemonSet", ds.Name, string(ds.UID)).
						Container(builder.Container("app").Requests("200m", "256Mi").Limits("2", "1Gi")))
					e.source.Set(e.ns, pod, "app", usage[kind][0], usage[kind][1])
				}
			}
			e.policy("shipper", func(s *v1alpha1.TailorPolicySpec) {
				s.Selector = nil
				s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "shipper"}
				s.NodeClasses = &v1alpha1.NodeClasses{Label: tc.label}
				s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: time.Minute}}}
			})
			e.syncs("shipper", 12)

			pol := e.getPolicy("shipper")
			rec := pol.Status.Recommendation
			if rec == nil || len(rec.NodeClasses) != 2 {
				t.Fatalf("status.recommendation = %+v, want two node classes", rec)
			}
			byClass := map[string]v1alpha1.RecommendedContainerResources{}
			for _, c := range rec.NodeClasses {
				if c.Pods != 2 || len(c.ContainerRecommendations) != 1 {
					t.Errorf("class %s: %d pods, %d containers; want 2 and 1", c.Class, c.Pods, len(c.ContainerRecommendations))
					continue
				}
				byClass[c.Class] = c.ContainerRecommendations[0]
			}
			small, big := byClass[tc.small].Target, byClass[tc.big].Target
			if small == nil || big == nil {
				t.Fatalf("classes %v, want %s and %s", rec.NodeClasses, tc.small, tc.big)
			}
			if big.Cpu().Cmp(resource.MustParse("1500m")) < 0 || small.Cpu().Cmp(resource.MustParse("200m")) >= 0 {
				t.Errorf("cpu targets: %s on %s (uses 1500m), %s on %s (uses 40m)", big.Cpu(), tc.big, small.Cpu(), tc.small)
			}
			if top := rec.ContainerRecommendations; len(top) != 1 || top[0].Target.Cpu().Cmp(*big.Cpu()) != 0 || top[0].Target.Memory().Cmp(*big.Memory()) != 0 {
				t.Errorf("the workload's recommendation %+v, want the big class's %v", top, big)
			}
			for _, kind := range []string{"small", "big"} {
				want := map[string]corev1.ResourceList{"small": small, "big": big}[kind]
				for i := range 2 {
					p := e.getPod(fmt.Sprintf("shipper-%s-%d", kind, i))
					cpu, mem := p.Spec.Containers[0].Resources.Requests.Cpu(), p.Spec.Containers[0].Resources.Requests.Memory()
					if cpu.Cmp(*want.Cpu()) != 0 || mem.Cmp(*want.Memory()) != 0 {
						t.Errorf("%s requests %s/%s, want its class's %s/%s", p.Name, cpu, mem, want.Cpu(), want.Memory())
					}
					if restarts := p.Status.ContainerStatuses[0].RestartCount; restarts != 0 {
						t.Errorf("%s restarted %d times", p.Name, restarts)
					}
				}
			}
			if adm := pol.Status.Admission; adm == nil || len(adm.Containers) != 0 || adm.Message == "" {
				t.Errorf("status.admission = %+v, want no entry and a message saying new pods are sized in place", adm)
			}

			cp := &v1alpha1.TailorCheckpoint{}
			if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "shipper"}, cp); err != nil {
				t.Fatalf("get checkpoint: %v", err)
			}
			if len(cp.Spec.Containers) != 0 || len(cp.Spec.NodeClasses) != 2 {
				t.Errorf("checkpoint keeps %d workload-wide states and %d classes, want 0 and 2", len(cp.Spec.Containers), len(cp.Spec.NodeClasses))
			}
			for _, c := range cp.Spec.NodeClasses {
				if len(c.Containers) != 1 || c.Containers[0].Name != "app" {
					t.Errorf("checkpoint class %s keeps %+v, want app", c.Class, c.Containers)
				}
			}
		})
	}
}
