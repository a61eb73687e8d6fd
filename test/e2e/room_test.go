//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

// Room made in place on the real, full node (issue 37): a high-priority
// service throttled at its limit, with no CPU free on the node, beside two
// idle default-priority pods and an idle pod of a higher priority than the
// service, each over-requested and under a policy of its own. The
// default-priority pods' policies lower what the raise needs of them
// before their 15-minute windows end, the kubelet applies each lowering,
// and then the service's raise, which the kubelet admits into the room
// made: nobody is evicted or restarted, the higher-priority pod gives
// nothing, and the events name who gave room to whom.
func TestRoomMadeInPlaceOnAFullNode(t *testing.T) {
	cluster.Quiet(t)
	ctx := context.Background()
	ns := newNamespace(t)
	c := startManager(t, ns)
	high := highPriorityClass(t, ns, "tailor e2e: a service that room is made for")
	top := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-top"}, Value: 2000, Description: "tailor e2e: an idle pod above the service"}
	if _, err := clientset.SchedulingV1().PriorityClasses().Create(ctx, top, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.SchedulingV1().PriorityClasses().Delete(context.Background(), top.Name, metav1.DeleteOptions{})
	})

	cpuOnly := func(maxCPU string) func(*v1alpha1.TailorPolicySpec) {
		return func(s *v1alpha1.TailorPolicySpec) {
			cp := v1alpha1.ContainerPolicy{ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}
			if maxCPU != "" {
				cp.MaxAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(maxCPU)}
			}
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{cp}}
		}
	}
	busy := labelled(ns, "busy", app().Args("--listen=:8080", "--cpu=1500m", "--memory=8Mi").Requests("100m", "32Mi").Limits("200m", "64Mi"))
	busy.Spec.PriorityClassName = high.Name
	busy = createRunningPod(t, busy)

	// The node's free CPU, shared out so none is left: the pod above the
	// service takes 100m, the two below it the rest, half each. Either
	// can give up to three quarters of its request in one step; the
	// service may grow by one's request, more than either gives alone.
	free := freeCPUMillis(t)
	const above = 100
	below := (free - above) / 2
	idle := func(name, priority string, millis int64) *corev1.Pod {
		p := labelled(ns, name, app().Args("--listen=:8080", "--cpu=0", "--memory=8Mi").
			Request(corev1.ResourceCPU, resource.NewMilliQuantity(millis, resource.DecimalSI).String()).Request(corev1.ResourceMemory, "32Mi"))
		p.Spec.PriorityClassName = priority
		return createRunningPod(t, p)
	}
	pods := map[string]*corev1.Pod{
		"busy":   busy,
		"idle-a": idle("idle-a", "", below),
		"idle-b": idle("idle-b", "", free-above-below),
		"idle-c": idle("idle-c", top.Name, above),
	}
	for _, name := range []string{"idle-a", "idle-b", "idle-c"} {
		applyPolicy(t, c, ns, name, cpuOnly(""))
	}
	start := time.Now()
	applyPolicy(t, c, ns, "busy", cpuOnly(resource.NewMilliQuantity(100+below, resource.DecimalSI).String()))

	raised := waitPod(t, busy, 2*time.Minute, "busy raised in place", func(p *corev1.Pod) bool {
		return cpuRequestMillis(p) > 100 && !resizing(p)
	})
	recordConvergence(t, "full node -> room made by lower-priority pods -> raise applied", time.Since(start))
	t.Logf("busy cpu request 100m -> %dm (%dm free at the start); %s", cpuRequestMillis(raised), free-above-2*below, explainNodeRoom())

	lowered := 0
	for name, before := range pods {
		now := reread(t, before)
		if now.UID != before.UID || now.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("%s replaced or restarted (uid %s, was %s; %d restarts)", name, now.UID, before.UID, now.Status.ContainerStatuses[0].RestartCount)
		}
		was, is := cpuRequestMillis(before), cpuRequestMillis(now)
		switch {
		case name == "idle-c" && is != was:
			t.Errorf("idle-c, of a higher priority than the service, went from %dm to %dm", was, is)
		case strings.HasPrefix(name, "idle-") && is < was:
			lowered++
		}
	}
	if lowered == 0 {
		t.Errorf("busy raised, yet neither lower-priority pod was lowered: the node was not full (%s)", explainNodeRoom())
	}
	if got := tailorReasons(t, ns, busy.UID); !got["RoomMade"] {
		t.Errorf("events on busy from tailor: %v, want RoomMade", got)
	}
	for _, name := range []string{"idle-a", "idle-b", "idle-c"} {
		got := tailorReasons(t, ns, pods[name].UID)
		if got["Evicted"] || got["EvictionBlocked"] || (name == "idle-c" && got["RoomGiven"]) {
			t.Errorf("events on %s from tailor: %v", name, got)
		}
	}
}

// resizing says whether the pod has a resize the kubelet has not finished.
func resizing(p *corev1.Pod) bool { return podResizeState(p) != "" }

// tailorReasons are the reasons of the events tailor wrote about the pod
// uid in ns, each with true.
func tailorReasons(t *testing.T, ns string, uid types.UID) map[string]bool {
	t.Helper()
	evs, err := clientset.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for i := range evs.Items {
		e := &evs.Items[i]
		if e.Regarding.UID == uid && e.ReportingController == "tailor" {
			out[e.Reason] = true
		}
	}
	return out
}
