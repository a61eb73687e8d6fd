//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// A namespace whose LimitRange caps container CPU at 300m: tailor raises a
// busy Deployment in place, and its rollout, whose new pods start with a 3x
// startup boost, completes. Before tailor knew the namespace's rules, the
// apiserver refused every new pod (FailedCreate: maximum cpu usage per
// Container is 300m) and the rollout stalled (issue #23, finding 1). Each
// pod, running or new, stays within the LimitRange.
func TestLimitRangeMaxWithBoostAndRollout(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 600) // two pods of at most 300m each during the rollout
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmissionPolicy(t, cluster.AdmissionPolicyFile, ns)
	ctx := context.Background()
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-caps"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
		}}},
	}
	if _, err := clientset.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=400m", "--memory=24Mi").Requests("100m", "64Mi").Limits("200m", "128Mi"))
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(300))}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
	})
	first := livePods(t, ns, "web", 1, nil)
	// Raised in place as far as the LimitRange allows, and the status says
	// what caps new pods.
	p := waitPolicy(t, c, ns, "web", 3*time.Minute, "the pod raised in place, status.admission capped by the LimitRange", func(p *v1alpha1.TailorPolicy) bool {
		raised := false
		for _, ps := range p.Status.Pods {
			raised = raised || ps.Result == v1alpha1.ResizeResultDone
		}
		a := p.Status.Admission
		return raised && a != nil && strings.Contains(a.Summary, "LimitRange team-caps")
	})
	t.Logf("status.admission: %s", mustJSON(p.Status.Admission))
	within := func(pod *corev1.Pod, what string) {
		t.Helper()
		for _, ctr := range pod.Spec.Containers {
			if lim := ctr.Resources.Limits.Cpu(); lim.MilliValue() > 300 {
				t.Errorf("%s pod %s: cpu limit %s above the LimitRange max 300m", what, pod.Name, lim)
			}
		}
	}
	running, err := clientset.CoreV1().Pods(ns).Get(ctx, first[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	within(running, "running")
	if running.Generation < 2 {
		t.Errorf("pod %s was not resized in place (generation %d)", running.Name, running.Generation)
	}

	admitted := watchAdmitted(t, ns, "web")
	rollOut(t, ns, "web")
	rolledOutWithoutFailedCreate(ctx, t, ns, "web", 3*time.Minute)
	for _, pod := range livePods(t, ns, "web", 1, map[string]bool{first[0].Name: true}) {
		created := admitted(pod.Name)
		within(created, "new")
		if created.Annotations[v1alpha1.BoostAnnotation] == "" {
			t.Errorf("new pod %s was not boosted at admission: annotations %v", pod.Name, created.Annotations)
		}
	}
}

// A Recreate rollout on a full node: new pods are created with a 10x
// startup boost that the node's free room cannot hold, so the first wait
// Pending. tailor notices the pod it sized is unschedulable, plans new pods
// against the nodes' free room, replaces the pod with an Unschedulable event,
// and the rollout completes on the real scheduler (issue #23, finding 2).
func TestRecreateRolloutOnAFullNode(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmissionPolicy(t, cluster.AdmissionPolicyFile, ns)
	ctx := context.Background()
	deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=20m", "--memory=24Mi").Requests("100m", "64Mi").Limits("200m", "128Mi"),
		func(*corev1.PodSpec) {})
	if _, err := clientset.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	first := livePods(t, ns, "web", 1, nil)
	// 300m free beside it: 400m once the rollout deletes it, far from the
	// 1000m a boosted new pod asks.
	fillCPU(t, ns, 300)
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		// Taken back a second after Ready: the running pod, long Ready,
		// is not boosted in place.
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(1000)), Duration: &metav1.Duration{Duration: time.Second}}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
	})
	p := waitPolicy(t, c, ns, "web", 2*time.Minute, "status.admission with the boost", func(p *v1alpha1.TailorPolicy) bool {
		a := p.Status.Admission
		return a != nil && a.Boost != "" && a.ObservedGeneration == p.Generation
	})
	t.Logf("status.admission before the rollout: %s", mustJSON(p.Status.Admission))

	admitted := watchAdmitted(t, ns, "web")
	rollOut(t, ns, "web")
	err := oneReplicaRolledOut(ctx, ns, "web", 4*time.Minute)
	events, evErr := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if evErr != nil {
		t.Fatal(evErr)
	}
	var replaced []string
	for _, ev := range events.Items {
		if ev.Reason == "Unschedulable" && ev.InvolvedObject.Kind == "Pod" {
			replaced = append(replaced, ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	if err != nil {
		t.Fatalf("the rollout did not complete: %v; tailor's Unschedulable events: %q; %s", err, replaced, explainNodeRoom())
	}
	if len(replaced) == 0 {
		t.Errorf("no Unschedulable event: the boosted pod was not found stuck (did it fit? %s)", explainNodeRoom())
	}
	t.Logf("replaced: %q", replaced)
	for _, pod := range livePods(t, ns, "web", 1, map[string]bool{first[0].Name: true}) {
		created := admitted(pod.Name)
		if cpu := created.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(); cpu > 400 || cpu <= 100 {
			t.Errorf("the running new pod %s was created with %dm cpu: want its boost cut to the node's free room (at most 400m)", pod.Name, cpu)
		}
	}
}

// A LimitRange whose container default and defaultRequest are equal turns a
// sidecar declared without resources into requests = limits as the pod is
// admitted. tailor raises a RequestsOnly container throttled at its limit in
// place as far as the QoS class allows, a millicore below it, and the new
// pod of a rollout is created the same: Burstable, as the running pod. Before
// (issue #23, finding 4), the admission entry was judged on the template,
// whose sidecar has no limits, so it set app's request to its limit; after
// the LimitRanger had defaulted the sidecar, the new pod was Guaranteed
// (seen on this cluster: the running pod Burstable at 999m/1, its
// rollout's new pod Guaranteed at 1/1).
//
// On a build that judges QoS on the template only, status.admission sets
// app's cpu request to its 300m limit: the check of the entry before the
// rollout fails, and so do the new pod's status.qosClass (Guaranteed, the
// running pod Burstable) and its cgroup (not under kubepods/burstable).
// The in-place part passes on both builds: it is the control, the decision
// that already saw the pod as admitted.
func TestRolloutKeepsTheQoSClassUnderLimitRangeDefaults(t *testing.T) {
	cluster.Shared(t)
	// Two pods during the rollout (maxSurge 1), each app at most 299m and
	// the log sidecar's 50m default.
	reserveCPU(t, 700)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmissionPolicy(t, cluster.AdmissionPolicyFile, ns)
	ctx := context.Background()
	sidecar := builder.List("50m", "64Mi")
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: sidecar, DefaultRequest: sidecar,
		}}},
	}
	if _, err := clientset.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// app's memory request equals its limit, so a cpu request at its limit
	// would make every value of the pod request = limit once the sidecar
	// is defaulted. It burns 600m against a 300m limit: throttled, its
	// recommendation wants more than the limit.
	deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=600m", "--memory=24Mi").Requests("100m", "64Mi").Limits("300m", "64Mi"),
		func(s *corev1.PodSpec) {
			// An idle sidecar with no resources: the LimitRanger gives it
			// 50m/64Mi, requests = limits.
			s.Containers = append(s.Containers, *builder.Container("log").Image(loadgenImage).Args("--listen=:8081", "--cpu=0").Obj())
		})
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		// app alone, its cpu request alone, maxAllowed far above the
		// limit: only the QoS class stops the raise. The sidecar is left
		// as the LimitRanger made it; app names its mode, or it would
		// inherit the "*" entry's Off.
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
			{ContainerName: "*", Mode: ptr(v1alpha1.ContainerModeOff)},
			{ContainerName: "app", Mode: ptr(v1alpha1.ContainerModeAuto), ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly),
				ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
				MaxAllowed:          corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}
	})
	first := livePods(t, ns, "web", 1, nil)[0]
	// The scenario holds only if the LimitRanger defaulted the sidecar.
	defaulted := func(pod *corev1.Pod, what string) {
		t.Helper()
		for _, ctr := range pod.Spec.Containers {
			if ctr.Name == "log" && (!sameQuantities(sidecar, ctr.Resources.Requests) || !sameQuantities(sidecar, ctr.Resources.Limits)) {
				t.Fatalf("%s pod %s: sidecar log has %s, want the LimitRange's default 50m/64Mi requests = limits", what, pod.Name, mustJSON(ctr.Resources))
			}
		}
	}
	defaulted(&first, "first")

	// In place: raised to a millicore below the 300m limit, and held there
	// sync after sync, Burstable.
	top := waitPod(t, &first, 3*time.Minute, "app's cpu request raised in place to just below its limit", func(p *corev1.Pod) bool {
		return cpuRequestMillis(p) == 299
	})
	running := holdsFor(t, ns, "web", 3, func(p *corev1.Pod) error {
		if p.Status.QOSClass != corev1.PodQOSBurstable || cpuRequestMillis(p) != 299 || cpuLimitMillis(p) != 300 {
			return fmt.Errorf("QoS %s, app cpu %dm/%dm: want Burstable at 299m/300m", p.Status.QOSClass, cpuRequestMillis(p), cpuLimitMillis(p))
		}
		return nil
	}, top)

	// The entry for new pods, planned from the same recommendation: it
	// comes up to the same cap. A build judging the template would stop
	// at the limit itself (300m), which this wait lets through for the
	// check after it to catch.
	var entry v1alpha1.AdmittedContainer
	p := waitPolicy(t, c, ns, "web", 3*time.Minute, "status.admission raising app's cpu request as far as in place", func(p *v1alpha1.TailorPolicy) bool {
		a := p.Status.Admission
		if a == nil || a.ObservedGeneration != p.Generation || a.TargetKind != "Deployment" || a.TargetName != "web" {
			return false
		}
		for _, ac := range a.Containers {
			if ac.Name == "app" && ac.Requests.Cpu().MilliValue() >= 299 {
				entry = ac
				return true
			}
		}
		return false
	})
	t.Logf("status.admission before the rollout: %s", mustJSON(p.Status.Admission))
	if req, lim := entry.Requests.Cpu(), entry.Limits.Cpu(); lim.IsZero() || req.Cmp(*lim) >= 0 {
		t.Errorf("status.admission sets app's cpu request %s to its limit %s: with the sidecar defaulted the new pod would be Guaranteed", req, lim)
	}

	admitted := watchAdmitted(t, ns, "web")
	admissions := watchAdmissions(t, ns, "web")
	rollOut(t, ns, "web")
	rolledOutWithoutFailedCreate(ctx, t, ns, "web", 3*time.Minute)

	// The entry may have been written again between the read above and the
	// pod's creation: the new pod has the values of one of them.
	entries := map[int64]bool{entry.Requests.Cpu().MilliValue(): true}
	for _, a := range admissions() {
		for _, ac := range a.Containers {
			if ac.Name == "app" {
				entries[ac.Requests.Cpu().MilliValue()] = true
			}
		}
	}
	newPod := livePods(t, ns, "web", 1, map[string]bool{first.Name: true})[0]
	created := admitted(newPod.Name)
	defaulted(created, "new")
	// Created as the entry says, not as the template does: a pod the
	// admission policy left alone would be Burstable whatever the entry,
	// and prove nothing.
	if created.Annotations[v1alpha1.AdmittedAnnotation] == "" {
		t.Errorf("new pod %s was not sized at admission: annotations %v", created.Name, created.Annotations)
	}
	appReq, appLim := cpuRequestMillis(created), cpuLimitMillis(created)
	if !entries[appReq] {
		t.Errorf("new pod %s created with app cpu request %dm; status.admission said %v (m)", created.Name, appReq, entries)
	}
	if appLim != 300 || appReq >= appLim {
		t.Errorf("new pod %s created with app cpu %dm/%dm: want the request below the untouched 300m limit", created.Name, appReq, appLim)
	}
	// The QoS class the apiserver gave the new pod, and the cgroup the
	// kubelet put it in.
	if newPod.Status.QOSClass != running.Status.QOSClass {
		t.Errorf("new pod %s is %s, the running pod %s was %s: admission changed the QoS class (app cpu %dm/%dm, containers %s)",
			newPod.Name, newPod.Status.QOSClass, running.Name, running.Status.QOSClass, appReq, appLim, mustJSON(containerResources(created.Spec.Containers)))
	}
	if dir := cgroupDir(t, &newPod, "app", "cpu"); !strings.Contains(dir, "/kubepods/burstable/") {
		t.Errorf("new pod %s: the kubelet put app in %s, not under kubepods/burstable", newPod.Name, dir)
	}
}

// oneReplicaRolledOut waits until Deployment name's one replica is the
// updated, available one of its current generation.
func oneReplicaRolledOut(ctx context.Context, ns, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1, nil
	})
}

// rolledOutWithoutFailedCreate fails t unless Deployment name's rollout of
// its one replica completes within timeout with no pod the apiserver
// refused (a FailedCreate event names each).
func rolledOutWithoutFailedCreate(ctx context.Context, t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	err := oneReplicaRolledOut(ctx, ns, name, timeout)
	events, _ := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	for _, ev := range events.Items {
		t.Errorf("FailedCreate: %s", ev.Message)
	}
	if err != nil {
		t.Fatalf("the rollout did not complete: %v", err)
	}
}
