//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// The workload shapes beyond the demo's, on the real kubelet: what tailor
// sets reaches the cgroups, and the promises hold where the kubelet decides.

// cpuShares is what the kubelet writes to cpu.shares for a cpu request.
func cpuShares(milli int64) int64 { return max(milli*1024/1000, 2) }

// TestAutoscaleRequestsOnlyStopsBelowALimitThatWouldMakeItGuaranteed: a
// RequestsOnly container throttled at its limit has its request raised as
// far as the QoS class allows: its memory already has request == limit, so a
// cpu request at the limit would make the pod Guaranteed; it stops a
// millicore below, and the limit never moves.
func TestAutoscaleRequestsOnlyStopsBelowALimitThatWouldMakeItGuaranteed(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 500) // raised up to 499m, below its 500m limit
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "ro", app().Args("--listen=:8080", "--cpu=800m", "--memory=24Mi").
		Requests("100m", "64Mi").Limits("500m", "64Mi")))
	applyPolicy(t, c, ns, "ro", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly),
			ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
	})
	top := waitPod(t, pod, 2*time.Minute, "cpu request raised to just below the limit", func(p *corev1.Pod) bool { return cpuRequestMillis(p) == 499 })
	if got := cpuLimitMillis(top); got != 500 {
		t.Errorf("cpu limit = %dm, want 500m untouched", got)
	}
	waitCgroup(t, top, "app", "cpu", "cpu.shares", cpuShares(499))
	waitCgroup(t, top, "app", "cpu", "cpu.cfs_quota_us", 50000)
	// Still throttled, it stays at 499m sync after sync.
	final := holdsFor(t, ns, "ro", 3, func(p *corev1.Pod) error {
		if p.Status.QOSClass != corev1.PodQOSBurstable || cpuRequestMillis(p) != 499 {
			return fmt.Errorf("QoS %s, cpu request %dm: want Burstable at 499m", p.Status.QOSClass, cpuRequestMillis(p))
		}
		return nil
	}, top)
	if st := containerStatus(final, "app"); st.RestartCount != 0 {
		t.Errorf("restarts = %d, want 0", st.RestartCount)
	}
	// The raise that stopped at 499m says why. A later sync's status may
	// not: with the node's CPU contended the burner can get less than the
	// limit, its target falls under it, and the status says the target is
	// within the tolerance instead.
	waitEventFor(t, ns, pod.Name, "Resized", "request kept just below the 500m limit")
}

// TestAutoscaleMemoryRequestWithoutLimitKeepsTheWorkingSetFloor: a
// container with a memory request and no limit, using far less, is lowered,
// but never below its working set plus 10%, and gets no limit. The manager
// runs without the recommender's memory margin, so the recommendation
// itself falls below the working set and only the floor holds it.
func TestAutoscaleMemoryRequestWithoutLimitKeepsTheWorkingSetFloor(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 100m; memory only
	ns := newNamespace(t)
	rec := recommend.DefaultConfig()
	rec.MemoryMinMargin, rec.MemoryHeadroom, rec.MemoryJitterMargin = 0, 0, 0
	c := startManagerWith(t, manager.Options{Namespaces: []string{ns}, MetricsSource: "kubelet", KubeletThrottling: true, Recommender: &rec})
	pod := createRunningPod(t, labelled(ns, "nolimit", app().Args("--listen=:8080", "--cpu=10m", "--memory=150Mi").
		Requests("100m", "600Mi").Limits("200m", "")))
	applyPolicy(t, c, ns, "nolimit", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 20 * time.Second}}
	})
	// 600Mi -> at most a 75% step down: 150Mi; the floor is the 150Mi the
	// load generator holds (and the runtime's own) plus 10%.
	lowered := waitPod(t, pod, 3*time.Minute, "memory request lowered", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Memory().Cmp(resource.MustParse("600Mi")) < 0
	})
	got := lowered.Spec.Containers[0].Resources
	if floor := resource.MustParse("165Mi"); got.Requests.Memory().Cmp(floor) < 0 {
		t.Errorf("memory request lowered to %s, below the 150Mi held + 10%% (%s)", got.Requests.Memory().String(), floor.String())
	}
	if _, has := got.Limits[corev1.ResourceMemory]; has {
		t.Errorf("a memory limit was added: %s", got.Limits.Memory().String())
	}
	t.Logf("memory request 600Mi -> %s with 150Mi held", got.Requests.Memory().String())
}

// TestAutoscalePodLevelResources: a pod sized by pod-level resources, its
// container without any of its own, is throttled by the pod's CPU limit;
// tailor raises the pod-level request and limit, the pod cgroup follows, and
// the container never gets a limit.
func TestAutoscalePodLevelResources(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 900) // a 600m burner raised from 200m at pod level
	ns := newNamespace(t)
	c := startManager(t, ns)
	p := labelled(ns, "pl", app().Args("--listen=:8080", "--cpu=600m", "--memory=24Mi"))
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: builder.List("200m", "64Mi"), Limits: builder.List("400m", "128Mi")}
	pod := createRunningPod(t, p)
	applyPolicy(t, c, ns, "pl", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
	})
	podCPU := func(p *corev1.Pod) (int64, int64) {
		return p.Spec.Resources.Requests.Cpu().MilliValue(), p.Spec.Resources.Limits.Cpu().MilliValue()
	}
	raised := waitPod(t, pod, 2*time.Minute, "pod-level cpu raised", func(p *corev1.Pod) bool {
		req, _ := podCPU(p)
		return req > 200
	})
	req, lim := podCPU(raised)
	t.Logf("pod-level cpu 200m/400m -> %dm/%dm", req, lim)
	if lim < 2*req-2 || lim > 2*req+2 {
		t.Errorf("pod-level cpu %dm/%dm lost the 1:2 ratio", req, lim)
	}
	if l := raised.Spec.Containers[0].Resources.Limits; len(l) > 0 {
		t.Errorf("the container got limits %v; it had none", l)
	}
	podDir := cgroupDir(t, raised, "app", "cpu") + "/.."
	waitFile(t, podDir+"/cpu.cfs_quota_us", lim*100)
	if raised.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("QoS %s, want Burstable", raised.Status.QOSClass)
	}
	if st := containerStatus(raised, "app"); st.RestartCount != 0 {
		t.Errorf("restarts = %d, want 0", st.RestartCount)
	}
}

// TestAutoscaleHistoryOutlivesTheManager: a memory peak learnt by one
// manager still holds the request up under the next, which starts from the
// policy's TailorCheckpoint. Without it, the second manager would see only
// the small working set and lower the request once its stabilization window
// (10s) had passed.
func TestAutoscaleHistoryOutlivesTheManager(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 100m; memory only
	ns := newNamespace(t)
	opts := manager.Options{Namespaces: []string{ns}, MetricsSource: "kubelet", KubeletThrottling: true, CheckpointInterval: 2 * time.Second}
	first, stopFirst := runManager(t, opts)
	pod := createRunningPod(t, labelled(ns, "db", app().Args("--listen=:8080", "--cpu=10m", "--memory=200Mi").
		Requests("100m", "128Mi").Limits("200m", "256Mi")))
	// The limit the test asserts is the peak the first read names plus
	// the margin: a read taken while the load generator was still
	// touching its 200Mi would name less, and a later, fuller read moves
	// the target by less than the tolerance, so no second raise follows.
	waitWorkingSet(t, pod, "app", 200<<20)
	applyPolicy(t, first, ns, "db", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 10 * time.Second}}
	})
	// 200Mi held: the request rises to the peak (above the working set
	// plus 10%), the limit to the tail, the peak plus the 256Mi margin.
	raised := waitPod(t, pod, 2*time.Minute, "memory raised for the 200Mi peak", func(p *corev1.Pod) bool {
		r := p.Spec.Containers[0].Resources
		return r.Requests.Memory().Cmp(resource.MustParse("200Mi")) >= 0 && r.Limits.Memory().Cmp(resource.MustParse("450Mi")) >= 0
	})
	peakReq := raised.Spec.Containers[0].Resources.Requests.Memory().DeepCopy()
	peakLim := raised.Spec.Containers[0].Resources.Limits.Memory().DeepCopy()
	setMemory(t, raised, "20Mi")
	// Let the first manager see the drop and checkpoint it.
	time.Sleep(15 * time.Second)
	cp := &v1alpha1.TailorCheckpoint{}
	if err := first.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, cp); err != nil {
		t.Fatalf("no checkpoint of policy db: %v", err)
	}
	t.Logf("checkpoint written %s with %d container(s)", cp.Spec.WriteTime.Format(time.RFC3339), len(cp.Spec.Containers))
	stopFirst()

	// The second manager must have synced the policy for longer than the
	// stabilization window, each sync free to lower: ten syncs 2s apart
	// span it twice.
	_, _ = runManager(t, opts)
	last := holdsFor(t, ns, "db", 10, func(p *corev1.Pod) error {
		if got := p.Spec.Containers[0].Resources.Requests.Memory(); got.Cmp(peakReq) < 0 {
			return fmt.Errorf("the second manager lowered memory %s -> %s: it forgot the 200Mi peak", peakReq.String(), got.String())
		}
		if got := p.Spec.Containers[0].Resources.Limits.Memory(); got.Cmp(peakLim) < 0 {
			return fmt.Errorf("the second manager lowered the memory limit %s -> %s: it forgot the 200Mi peak", peakLim.String(), got.String())
		}
		return nil
	}, raised)
	if st := containerStatus(last, "app"); st.RestartCount != 0 {
		t.Errorf("restarts = %d, want 0", st.RestartCount)
	}
}
