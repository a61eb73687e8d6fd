//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

func waitPolicy(t *testing.T, c client.Client, ns, name string, timeout time.Duration, what string, cond func(*v1alpha1.TailorPolicy) bool) *v1alpha1.TailorPolicy {
	t.Helper()
	p := &v1alpha1.TailorPolicy{}
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, err
		}
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("policy %s: %s: not within %s: %v\nstatus: %s", name, what, timeout, err, mustJSON(p.Status))
	}
	return p
}

func blockedReason(p *v1alpha1.TailorPolicy) (string, string) {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionResizesBlocked)
	if c == nil || c.Status != metav1.ConditionTrue {
		return "", ""
	}
	return c.Reason, c.Message
}

func TestAutoscaleCutsRaiseToWhatFits(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "cut", app().Args("--listen=:8080", "--cpu=800m", "--memory=24Mi").
		Requests("100m", "64Mi").Limits("200m", "256Mi")))
	// 60m of room: a raise of the request past 160m does not fit.
	fillCPU(t, ns, 60)
	applyPolicy(t, c, ns, "cut", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		}}}
	})

	// The throttled container wants far more than 160m; tailor raises it as
	// far as the node allows and says what it could not do.
	p := waitPolicy(t, c, ns, "cut", 2*time.Minute, "ResizesBlocked NodeFull", func(p *v1alpha1.TailorPolicy) bool {
		reason, _ := blockedReason(p)
		return reason == string(podchange.SkipNoRoom)
	})
	_, msg := blockedReason(p)
	t.Logf("ResizesBlocked: %s", msg)
	got := waitPod(t, pod, time.Minute, "cpu request raised into the room", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() > 100
	})
	time.Sleep(6 * time.Second)
	got, err := clientset.CoreV1().Pods(ns).Get(context.Background(), got.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := got.Spec.Containers[0].Resources
	if req := res.Requests.Cpu().MilliValue(); req > 160 {
		t.Errorf("cpu request %dm: past the 160m the node had room for", req)
	}
	if req, lim := res.Requests.Cpu().MilliValue(), res.Limits.Cpu().MilliValue(); lim < 2*req-2 || lim > 2*req+2 {
		t.Errorf("request %dm and limit %dm lost the 1:2 ratio in the cut", req, lim)
	}
	// Nothing was asked that the kubelet had to park.
	for _, cond := range got.Status.Conditions {
		if cond.Type == corev1.PodResizePending {
			t.Errorf("pod has %s %s: tailor asked for more than fits: %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	waitCgroupFollowsSpec(t, got, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)
}

// installRecreateAdmission creates the admission policy of
// config/components/eviction for the test's duration.
// The admission policy alone, against the real apiserver: a status entry
// reaches exactly the pods of its owner, and in them exactly the containers
// and sidecars it names. Pods are created with dryRun=All, which runs
// mutating admission and stores nothing.
func TestRecreateAdmissionPolicy(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	installRecreateAdmission(t)
	ctx := context.Background()
	c := apiClient(t)
	// No manager runs in this test: the status written here stays.
	policy := &v1alpha1.TailorPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "params"},
		Spec:       v1alpha1.TailorPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}},
	}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	const owner, appOnly, sidecarOnly, naming = "0d1c1b6e-0000-4000-8000-000000000001", "0d1c1b6e-0000-4000-8000-000000000002",
		"0d1c1b6e-0000-4000-8000-000000000003", "0d1c1b6e-0000-4000-8000-000000000004"
	rl := func(cpu, memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	// Each entry names the template values it was planned from (the
	// template below), and the policy generation.
	app := func(cpu, memory, cpuLimit, memoryLimit string) v1alpha1.RecreatedContainer {
		return v1alpha1.RecreatedContainer{Name: "app", TemplateRequests: rl("100m", "32Mi"), TemplateLimits: rl("200m", "64Mi"),
			Requests: rl(cpu, memory), Limits: rl(cpuLimit, memoryLimit)}
	}
	proxy := func(cpu, memory, cpuLimit, memoryLimit string) v1alpha1.RecreatedContainer {
		return v1alpha1.RecreatedContainer{Name: "proxy", TemplateRequests: rl("50m", "16Mi"), TemplateLimits: rl("100m", "32Mi"),
			Requests: rl(cpu, memory), Limits: rl(cpuLimit, memoryLimit)}
	}
	gen := policy.Generation
	policy.Status.Recreations = []v1alpha1.Recreation{
		{OwnerUID: owner, OwnerKind: "ReplicaSet", OwnerName: "web", EvictedPod: "web-old", EvictionTime: metav1.Now(), ObservedGeneration: gen,
			Containers: []v1alpha1.RecreatedContainer{app("300m", "96Mi", "600m", "192Mi"), proxy("150m", "48Mi", "300m", "96Mi")}},
		{OwnerUID: appOnly, OwnerKind: "ReplicaSet", OwnerName: "api", EvictedPod: "api-old", EvictionTime: metav1.Now(), ObservedGeneration: gen,
			Containers: []v1alpha1.RecreatedContainer{app("250m", "80Mi", "500m", "160Mi")}},
		{OwnerUID: sidecarOnly, OwnerKind: "ReplicaSet", OwnerName: "log", EvictedPod: "log-old", EvictionTime: metav1.Now(), ObservedGeneration: gen,
			Containers: []v1alpha1.RecreatedContainer{proxy("120m", "40Mi", "240m", "80Mi")}},
		{OwnerUID: naming, OwnerKind: "ReplicaSet", OwnerName: "gone", EvictedPod: "gone-old", EvictionTime: metav1.Now(), ObservedGeneration: gen,
			Containers: []v1alpha1.RecreatedContainer{app("250m", "80Mi", "500m", "160Mi"), {Name: "gone", Requests: rl("1", "1Gi")}}},
	}
	if err := c.Status().Update(ctx, policy); err != nil {
		t.Fatalf("writing status.recreations: %v", err)
	}

	template := func(name string) *builder.PodWrapper {
		return builder.Pod(name).Namespace(ns).
			Container(builder.Container("app").Image(loadgenImage).Requests("100m", "32Mi").Limits("200m", "64Mi")).
			Sidecar(builder.Container("proxy").Image(loadgenImage).Requests("50m", "16Mi").Limits("100m", "32Mi")).
			InitContainer(builder.Container("setup").Image(loadgenImage).Requests("10m", "8Mi").Limits("20m", "16Mi"))
	}
	type want struct{ app, proxy, setup string }
	asCreated := want{app: "100m/32Mi 200m/64Mi", proxy: "50m/16Mi 100m/32Mi", setup: "10m/8Mi 20m/16Mi"}
	// In order: the entries are seen at admission before a pod is found
	// untouched, or "untouched" would prove nothing.
	cases := []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		{name: "the owner's pod: its container and sidecar, not the init container",
			pod:  template("web-new").Owner("ReplicaSet", "web", owner).Obj(),
			want: want{app: "300m/96Mi 600m/192Mi", proxy: "150m/48Mi 300m/96Mi", setup: asCreated.setup},
		},
		{name: "an entry naming only the container leaves the sidecar",
			pod:  template("api-new").Owner("ReplicaSet", "api", appOnly).Obj(),
			want: want{app: "250m/80Mi 500m/160Mi", proxy: asCreated.proxy, setup: asCreated.setup},
		},
		{name: "an entry naming only the sidecar leaves the container",
			pod:  template("log-new").Owner("ReplicaSet", "log", sidecarOnly).Obj(),
			want: want{app: asCreated.app, proxy: "120m/40Mi 240m/80Mi", setup: asCreated.setup},
		},
		{name: "an entry naming a container the pod lacks changes none: all or nothing",
			pod:  template("gone-new").Owner("ReplicaSet", "gone", naming).Obj(),
			want: asCreated,
		},
		{name: "another owner's pod is untouched",
			pod:  template("other").Owner("ReplicaSet", "other", "0d1c1b6e-0000-4000-8000-0000000000ff").Obj(),
			want: asCreated,
		},
		{name: "a pod without a controller is untouched",
			pod:  template("bare").Obj(),
			want: asCreated,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got want
			err := admitUntil(ctx, tc.pod, func(created *corev1.Pod) bool {
				cs := containersText(created)
				got = want{app: cs["app"], proxy: cs["proxy"], setup: cs["setup"]}
				return got == tc.want
			})
			if err != nil {
				t.Errorf("admitted with %+v, want %+v: %v", got, tc.want, err)
			}
		})
	}
}

// admitUntil creates pod with dryRun=All, which runs mutating admission and
// stores nothing, until check accepts the pod admission made, for up to
// 15s: the apiserver reads the policies from its own informer, which the
// status written by a test reaches within moments.
func admitUntil(ctx context.Context, pod *corev1.Pod, check func(*corev1.Pod) bool) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		created, err := clientset.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return check(created), nil
	})
}

// containersText is each container's and init container's requests and
// limits, as "cpu/memory cpu/memory", by name.
func containersText(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
		r := c.Resources
		out[c.Name] = fmt.Sprintf("%s/%s %s/%s", r.Requests.Cpu(), r.Requests.Memory(), r.Limits.Cpu(), r.Limits.Memory())
	}
	return out
}

func installRecreateAdmission(t *testing.T) {
	t.Helper()
	installAdmissionPolicy(t, cluster.RecreatePolicyFile, "")
}

// installAdmissionPolicy applies a file of MutatingAdmissionPolicies and
// their bindings (cluster.ApplyAdmissionPolicies) for the test's duration.
func installAdmissionPolicy(t *testing.T, file, ns string) {
	t.Helper()
	remove, err := cluster.ApplyAdmissionPolicies(context.Background(), dynamic.NewForConfigOrDie(restConfig), file, ns)
	if remove != nil {
		t.Cleanup(func() {
			if err := remove(); err != nil {
				t.Error(err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestAutoscaleRecreatesWhenNoRoomInPlace(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installRecreateAdmission(t)
	ctx := context.Background()
	pc := highPriorityClass(t, ns, "tailor e2e: a service that may preempt batch pods")

	const name = "grow"
	template := labelled(ns, name, app().Args("--listen=:8080", "--cpu=800m", "--memory=24Mi").
		Requests("100m", "64Mi").Limits("200m", "256Mi"))
	template.Spec.PriorityClassName = pc.Name
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: template.Labels}, Spec: template.Spec},
		},
	}
	if _, err := clientset.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitRunning(t, onlyPod(t, ns, name, ""))
	// No room at all in place; a PodDisruptionBudget forbids evicting the
	// only replica, for now.
	filler := fillCPU(t, ns, 0)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	if _, err := clientset.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	written := watchRecreations(t, ns)
	applyPolicy(t, c, ns, name, func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate,
			RecreateAfter: &metav1.Duration{Duration: 5 * time.Second}}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")},
		}}}
	})

	// Each attempt writes the replacement's resources before asking; a
	// refusal takes them back in the same sync.
	p := waitPolicy(t, c, ns, name, 2*time.Minute, "ResizesBlocked EvictionBlocked, status.recreations empty", func(p *v1alpha1.TailorPolicy) bool {
		_, msg := blockedReason(p)
		return strings.Contains(msg, "EvictionBlocked") && len(p.Status.Recreations) == 0
	})
	_, msg := blockedReason(p)
	t.Logf("ResizesBlocked: %s", msg)
	if _, err := clientset.CoreV1().Pods(ns).Get(ctx, first.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the PodDisruptionBudget did not keep pod %s: %v", first.Name, err)
	}

	admitted := watchAdmitted(t, ns, name)
	start := time.Now()
	if err := clientset.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replacement := waitRunning(t, onlyPod(t, ns, name, first.Name))
	recordConvergence(t, "no room in place -> PDB lifted -> replacement running", time.Since(start))
	// Once running, with room, tailor goes on resizing the replacement in
	// place (a resize raises its generation): what admission gave it is the
	// pod as created.
	replacement = admitted(replacement.Name)

	p = &v1alpha1.TailorPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Status.Recreations) != 1 || len(p.Status.Recreations[0].Containers) != 1 {
		t.Fatalf("status.recreations = %s; want one entry for the evicted pod", mustJSON(p.Status.Recreations))
	}
	rc := p.Status.Recreations[0]
	if rc.EvictedPod != first.Name || rc.OwnerKind != "ReplicaSet" {
		t.Errorf("recreation names pod %s of %s; want %s of its ReplicaSet", rc.EvictedPod, rc.OwnerKind, first.Name)
	}
	// The replacement was admitted with the recorded resources, not its
	// template's, keeping the 1:2 ratio, within maxAllowed.
	got := replacement.Spec.Containers[0].Resources
	if want := rc.Containers[0]; !sameQuantities(want.Requests, got.Requests) || !sameQuantities(want.Limits, got.Limits) {
		t.Errorf("replacement %s admitted with %s; status.recreations says %s (entries written: %s)",
			replacement.Name, mustJSON(got), mustJSON(want), mustJSON(written()))
	}
	// maxAllowed bounds the request; the limit keeps its ratio to it.
	if req, lim := got.Requests.Cpu().MilliValue(), got.Limits.Cpu().MilliValue(); req <= 100 || req > 600 || lim < 2*req-2 || lim > 2*req+2 {
		t.Errorf("replacement cpu request %dm limit %dm: want a raise from 100m/200m, ratio 1:2, request within maxAllowed 600m", req, lim)
	}
	if mem := got.Limits.Memory().String(); mem != "256Mi" {
		t.Errorf("replacement memory limit %s; the policy controls cpu only", mem)
	}
	// Once placed with room to spare, the replacement stays: no second
	// eviction.
	time.Sleep(8 * time.Second)
	if p, err := clientset.CoreV1().Pods(ns).Get(ctx, replacement.Name, metav1.GetOptions{}); err != nil || !p.DeletionTimestamp.IsZero() {
		t.Errorf("replacement %s was evicted again (%v): tailor loops", replacement.Name, err)
	}
	// The scheduler made room by preempting the lower-priority filler.
	if f, err := clientset.CoreV1().Pods(ns).Get(ctx, filler.Name, metav1.GetOptions{}); err == nil && f.DeletionTimestamp.IsZero() {
		t.Errorf("filler pod still running: the replacement got room some other way")
	}
	evs, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var evicted, blocked bool
	for _, e := range evs.Items {
		if e.Regarding.Name != first.Name || e.ReportingController != "tailor" {
			continue
		}
		evicted = evicted || e.Reason == "Evicted"
		blocked = blocked || e.Reason == "EvictionBlocked"
	}
	if !evicted || !blocked {
		t.Errorf("events on pod %s from tailor: Evicted %v, EvictionBlocked %v; want both", first.Name, evicted, blocked)
	}
}

// watchRecreations records every status.recreations container entry written
// to the namespace's TailorPolicies from now until the test ends, and
// returns a function that lists them.
func watchRecreations(t *testing.T, ns string) func() []v1alpha1.RecreatedContainer {
	t.Helper()
	scheme, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1alpha1.TailorPolicyList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []v1alpha1.RecreatedContainer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1alpha1.TailorPolicy)
			if !ok {
				continue
			}
			mu.Lock()
			for _, rc := range p.Status.Recreations {
				seen = append(seen, rc.Containers...)
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return func() []v1alpha1.RecreatedContainer {
		mu.Lock()
		defer mu.Unlock()
		return append([]v1alpha1.RecreatedContainer(nil), seen...)
	}
}

// watchAdmitted watches the pods of app in ns from now on, and returns a
// function giving a pod as it was created (its first watch event), before
// anything patched or resized it. It fails the test if the pod was not seen
// being created within 10s.
func watchAdmitted(t *testing.T, ns, app string) func(name string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	created := map[string]*corev1.Pod{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			mu.Lock()
			created[p.Name] = p
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return func(name string) *corev1.Pod {
		t.Helper()
		var p *corev1.Pod
		_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			p = created[name]
			return p != nil, nil
		})
		if p == nil {
			t.Fatalf("pod %s/%s was not seen being created", ns, name)
		}
		if p.Generation != 1 {
			t.Errorf("pod %s first seen at generation %d: not as created", name, p.Generation)
		}
		return p
	}
}

// onlyPod waits until the workload has exactly one pod that is not the
// named one and not terminating, and returns it.
func onlyPod(t *testing.T, ns, app, not string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		var live []*corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			if p.Name != not && p.DeletionTimestamp.IsZero() {
				live = append(live, p)
			}
		}
		if len(live) != 1 {
			return false, nil
		}
		got = live[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("workload %s: no single pod other than %q: %v", app, not, err)
	}
	return got
}

// highPriorityClass creates PriorityClass <ns>-high, of value 1000, for the
// test's duration.
func highPriorityClass(t *testing.T, ns, description string) *schedulingv1.PriorityClass {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-high"}, Value: 1000, Description: description}
	if _, err := clientset.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	return pc
}
