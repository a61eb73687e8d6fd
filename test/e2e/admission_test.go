//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

func installAdmission(t *testing.T) {
	t.Helper()
	installAdmissionPolicy(t, cluster.AdmissionPolicyFile, "")
}

// The admission policy tailor-admission alone, against the real apiserver:
// a policy's status.admission reaches exactly the new pods of its target,
// all of their named containers or none, and never in mode Off or where a
// recreation entry speaks for the owner. Pods are created with dryRun=All,
// which runs mutating admission and stores nothing; no manager runs, so the
// statuses written here stay.
func TestAdmissionPolicy(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	installAdmission(t)
	ctx := context.Background()
	c := apiClient(t)

	entry := func(kind, name string, gen int64) *v1alpha1.Admission {
		return &v1alpha1.Admission{TargetKind: kind, TargetName: name, ObservedGeneration: gen, Summary: "app: cpu 100m->300m", Containers: []v1alpha1.AdmittedContainer{
			{Name: "app", TemplateRequests: builder.List("100m", "32Mi"), TemplateLimits: builder.List("200m", "64Mi"),
				Requests: builder.List("300m", "96Mi"), Limits: builder.List("600m", "192Mi")},
			{Name: "proxy", TemplateRequests: builder.List("50m", "16Mi"), TemplateLimits: builder.List("100m", "32Mi"),
				Requests: builder.List("150m", "48Mi"), Limits: builder.List("300m", "96Mi")},
		}}
	}
	const recreatedUID = "0d1c1b6e-0000-4000-8000-0000000000aa"
	policies := []struct {
		name, kind, target string
		mode               v1alpha1.UpdateMode
		recreation         bool
	}{
		{name: "web", kind: "Deployment", target: "web", mode: v1alpha1.UpdateModeInPlace},
		{name: "db", kind: "StatefulSet", target: "db", mode: v1alpha1.UpdateModeInPlace},
		{name: "quiet", kind: "Deployment", target: "quiet", mode: v1alpha1.UpdateModeOff},
		{name: "moving", kind: "Deployment", target: "moving", mode: v1alpha1.UpdateModeInPlaceOrRecreate, recreation: true},
	}
	for _, pc := range policies {
		policy := &v1alpha1.TailorPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pc.name},
			Spec: v1alpha1.TailorPolicySpec{
				TargetRef:    &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: pc.kind, Name: pc.target},
				UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: pc.mode},
			},
		}
		if err := c.Create(ctx, policy); err != nil {
			t.Fatal(err)
		}
		policy.Status.Admission = entry(pc.kind, pc.target, policy.Generation)
		if pc.recreation {
			policy.Status.Recreations = []v1alpha1.Recreation{{OwnerUID: recreatedUID, OwnerKind: "ReplicaSet", OwnerName: "moving-5d8f", EvictedPod: "moving-old",
				EvictionTime: metav1.Now(), ObservedGeneration: policy.Generation}}
		}
		if err := c.Status().Update(ctx, policy); err != nil {
			t.Fatalf("writing status.admission of %s: %v", pc.name, err)
		}
	}

	template := func(name string) *builder.PodWrapper {
		return builder.Pod(name).Namespace(ns).
			Container(builder.Container("app").Image(loadgenImage).Requests("100m", "32Mi").Limits("200m", "64Mi")).
			Sidecar(builder.Container("proxy").Image(loadgenImage).Requests("50m", "16Mi").Limits("100m", "32Mi")).
			InitContainer(builder.Container("setup").Image(loadgenImage).Requests("10m", "8Mi").Limits("20m", "16Mi"))
	}
	type want struct{ app, proxy, setup, note string }
	asCreated := want{app: "100m/32Mi 200m/64Mi", proxy: "50m/16Mi 100m/32Mi", setup: "10m/8Mi 20m/16Mi"}
	sized := func(policy string) want {
		return want{app: "300m/96Mi 600m/192Mi", proxy: "150m/48Mi 300m/96Mi", setup: asCreated.setup, note: policy + ": app: cpu 100m->300m"}
	}
	const rsUID, stsUID = "0d1c1b6e-0000-4000-8000-000000000001", "0d1c1b6e-0000-4000-8000-000000000002"
	// In order: the entries are seen at admission before a pod is found
	// untouched, or "untouched" would prove nothing.
	cases := []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		{name: "a new pod of the Deployment's ReplicaSet: container and sidecar, not the init container",
			pod:  template("web-new").Label("pod-template-hash", "7c9f8").Owner("ReplicaSet", "web-7c9f8", rsUID).Obj(),
			want: sized("web"),
		},
		{name: "a new pod of the StatefulSet",
			pod:  template("db-0").Owner("StatefulSet", "db", stsUID).Obj(),
			want: sized("db"),
		},
		{name: "a template changed since the entry: nothing changes, not even the unchanged sidecar",
			pod: builder.Pod("web-changed").Namespace(ns).Label("pod-template-hash", "aa11").Owner("ReplicaSet", "web-aa11", rsUID).
				Container(builder.Container("app").Image(loadgenImage).Requests("100m", "32Mi").Limits("250m", "64Mi")).
				Sidecar(builder.Container("proxy").Image(loadgenImage).Requests("50m", "16Mi").Limits("100m", "32Mi")).
				InitContainer(builder.Container("setup").Image(loadgenImage).Requests("10m", "8Mi").Limits("20m", "16Mi")).Obj(),
			want: want{app: "100m/32Mi 250m/64Mi", proxy: asCreated.proxy, setup: asCreated.setup},
		},
		{name: "a ReplicaSet whose name does not follow the pod's hash is not the Deployment's",
			pod:  template("web-other").Label("pod-template-hash", "7c9f8").Owner("ReplicaSet", "webapp-7c9f8", rsUID).Obj(),
			want: asCreated,
		},
		{name: "a policy in mode Off mutates nothing",
			pod:  template("quiet-new").Label("pod-template-hash", "66b").Owner("ReplicaSet", "quiet-66b", rsUID).Obj(),
			want: asCreated,
		},
		{name: "a replacement tailor-recreate speaks for is left to it",
			pod:  template("moving-new").Label("pod-template-hash", "5d8f").Owner("ReplicaSet", "moving-5d8f", recreatedUID).Obj(),
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
				got = want{app: cs["app"], proxy: cs["proxy"], setup: cs["setup"], note: created.Annotations[v1alpha1.AdmittedAnnotation]}
				return got == tc.want
			})
			if err != nil {
				t.Errorf("admitted with %+v, want %+v: %v", got, tc.want, err)
			}
		})
	}
}

// deployment creates a Deployment of replicas loadgen pods labelled
// app=<name>, with c's args and resources.
func deployment(t *testing.T, ns, name string, replicas int32, c *builder.ContainerWrapper, mutate ...func(*corev1.PodSpec)) *appsv1.Deployment {
	t.Helper()
	dep := cluster.Deployment(ns, name, replicas, c)
	for _, m := range mutate {
		m(&dep.Spec.Template.Spec)
	}
	created, err := clientset.AppsV1().Deployments(ns).Create(context.Background(), dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// livePods waits until the workload has exactly n running, ready pods none
// of which is in not, and returns them.
func livePods(t *testing.T, ns, app string, n int, not map[string]bool) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		got = nil
		for _, p := range list.Items {
			if !p.DeletionTimestamp.IsZero() {
				continue
			}
			if not[p.Name] || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
			got = append(got, p)
		}
		return len(got) == n, nil
	})
	if err != nil {
		t.Fatalf("workload %s: not %d new running pods: %v (have %d)", app, n, err, len(got))
	}
	return got
}

func rollOut(t *testing.T, ns, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"tailor-e2e/rollout":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := clientset.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A Deployment whose pods tailor has raised in place is rolled out and
// scaled out: its new pods are created at the recommendation (as the
// policy's status.admission says at that moment), annotated, with nothing
// restarted, and its template stays as it was written. A Deployment with a
// policy in mode Off, and one without a policy, get their new pods exactly
// as their templates say.
func TestAdmitNewPodsAtRecommendation(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmission(t)
	ctx := context.Background()

	busy := func() *builder.ContainerWrapper {
		return app().Args("--listen=:8080", "--cpu=400m", "--memory=24Mi").Requests("100m", "64Mi").Limits("200m", "128Mi")
	}
	idle := func() *builder.ContainerWrapper {
		return app().Args("--listen=:8080", "--cpu=0", "--memory=8Mi").Requests("50m", "32Mi").Limits("100m", "64Mi")
	}
	web := deployment(t, ns, "web", 2, busy())
	deployment(t, ns, "quiet", 1, busy())
	deployment(t, ns, "other", 1, idle())
	for _, name := range []string{"web", "quiet"} {
		mode := v1alpha1.UpdateModeInPlace
		if name == "quiet" {
			mode = v1alpha1.UpdateModeOff
		}
		applyPolicy(t, c, ns, name, func(s *v1alpha1.TailorPolicySpec) {
			s.Selector = nil
			s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
			s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: mode}
			s.Behavior.MaxConcurrentResizes = ptr(int32(2))
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
				ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
				MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			}}}
		})
	}
	firstPods := livePods(t, ns, "web", 2, nil)
	// tailor raises the throttled pods in place, and says what new pods get.
	p := waitPolicy(t, c, ns, "web", 3*time.Minute, "both pods raised, status.admission sizing new pods", func(p *v1alpha1.TailorPolicy) bool {
		raised := 0
		for _, ps := range p.Status.Pods {
			if ps.Result == v1alpha1.ResizeResultDone {
				raised++
			}
		}
		return raised == 2 && p.Status.Admission != nil && len(p.Status.Admission.Containers) == 1
	})
	t.Logf("status.admission: %s", mustJSON(p.Status.Admission))
	quiet := waitPolicy(t, c, ns, "quiet", time.Minute, "a recommendation in mode Off", func(p *v1alpha1.TailorPolicy) bool {
		return p.Status.Recommendation != nil
	})
	if quiet.Status.Admission != nil {
		t.Errorf("policy in mode Off has status.admission %s", mustJSON(quiet.Status.Admission))
	}

	old := map[string]bool{}
	for _, p := range firstPods {
		old[p.Name] = true
	}
	seenAdmissions := watchAdmissions(t, ns, "web")
	admittedWeb := watchAdmitted(t, ns, "web")
	admittedQuiet := watchAdmitted(t, ns, "quiet")
	admittedOther := watchAdmitted(t, ns, "other")
	quietOld, otherOld := livePods(t, ns, "quiet", 1, nil), livePods(t, ns, "other", 1, nil)
	old[quietOld[0].Name], old[otherOld[0].Name] = true, true
	for _, name := range []string{"web", "quiet", "other"} {
		rollOut(t, ns, name)
	}
	rolled := livePods(t, ns, "web", 2, old)
	if _, err := clientset.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	all := livePods(t, ns, "web", 3, old)

	// Each new pod as created: an entry the policy's status held (the
	// recommendation moves while pods come), all of it, and annotated with
	// what was applied.
	entries := seenAdmissions()
	for _, pod := range all {
		created := admittedWeb(pod.Name)
		got := created.Spec.Containers[0].Resources
		match := false
		for _, e := range entries {
			w := e.Containers[0]
			match = match || (sameQuantities(w.Requests, got.Requests) && sameQuantities(w.Limits, got.Limits))
		}
		if !match {
			t.Errorf("pod %s created with %s; no status.admission written said so: %s", pod.Name, mustJSON(got), mustJSON(entries))
		}
		wantNote := fmt.Sprintf("web: app: cpu 100m->%s (limit 200m->%s)", got.Requests.Cpu(), got.Limits.Cpu())
		if note := created.Annotations[v1alpha1.AdmittedAnnotation]; note != wantNote {
			t.Errorf("pod %s annotation %s=%q; want %q", pod.Name, v1alpha1.AdmittedAnnotation, note, wantNote)
		}
		if cpu := got.Requests.Cpu().MilliValue(); cpu <= 100 || cpu > 250 {
			t.Errorf("pod %s created with cpu request %dm; want the raise from 100m, within maxAllowed 250m", pod.Name, cpu)
		}
		if lim, req := got.Limits.Cpu().MilliValue(), got.Requests.Cpu().MilliValue(); lim < 2*req-2 || lim > 2*req+2 {
			t.Errorf("pod %s cpu limit %dm for request %dm: the template's 1:2 ratio is lost", pod.Name, lim, req)
		}
		if mem := got.Requests.Memory().String(); mem != "64Mi" {
			t.Errorf("pod %s memory request %s; the policy controls cpu only", pod.Name, mem)
		}
		if created.Status.QOSClass != "" && created.Status.QOSClass != corev1.PodQOSBurstable {
			t.Errorf("pod %s QoS %s", pod.Name, created.Status.QOSClass)
		}
	}
	t.Logf("rolled out: %d pods, then scaled out to %d; %d status.admission entries written meanwhile", len(rolled), len(all), len(entries))
	// Nothing restarted: a pod that starts at its size needs no resize
	// that could restart it.
	time.Sleep(10 * time.Second)
	for _, pod := range livePods(t, ns, "web", 3, old) {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("pod %s container %s restarted %d times", pod.Name, cs.Name, cs.RestartCount)
			}
		}
	}
	// The template is as it was written, but for the rollout's annotation.
	dep, err := clientset.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(web.Spec.Template.Spec.Containers[0].Resources, dep.Spec.Template.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("the Deployment's template resources changed (-before,+after):\n%s", diff)
	}
	// Mode Off and no policy: created as their templates say.
	for name, admitted := range map[string]func(string) *corev1.Pod{"quiet": admittedQuiet, "other": admittedOther} {
		for _, pod := range livePods(t, ns, name, 1, old) {
			created := admitted(pod.Name)
			dep, err := clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tmpl := dep.Spec.Template.Spec.Containers[0].Resources
			got := created.Spec.Containers[0].Resources
			if !sameQuantities(tmpl.Requests, got.Requests) || !sameQuantities(tmpl.Limits, got.Limits) {
				t.Errorf("%s pod %s created with %s; its template says %s", name, pod.Name, mustJSON(got), mustJSON(tmpl))
			}
			if note, ok := created.Annotations[v1alpha1.AdmittedAnnotation]; ok {
				t.Errorf("%s pod %s annotated %q", name, pod.Name, note)
			}
		}
	}
}

// watchAdmissions records, from now until the test ends, every
// status.admission with containers written to the named policy (the one
// it has now included), and returns a function that lists them.
func watchAdmissions(t *testing.T, ns, name string) func() []v1alpha1.Admission {
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
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []v1alpha1.Admission
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1alpha1.TailorPolicy)
			if !ok || p.Name != name || p.Status.Admission == nil || len(p.Status.Admission.Containers) == 0 {
				continue
			}
			mu.Lock()
			seen = append(seen, *p.Status.Admission.DeepCopy())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return func() []v1alpha1.Admission {
		mu.Lock()
		defer mu.Unlock()
		return append([]v1alpha1.Admission(nil), seen...)
	}
}

// A policy edited while no manager runs (issue #23, finding 3): the
// status.admission a manager planned with the startup boost boosts new
// pods while the policy is as planned; once the boost is removed, with no
// manager to plan again, new pods are created as their template says (no
// boost that no manager would take back); a manager that starts then plans
// for the edited policy, and its entry applies. Both admission policies are
// bound to the test's namespace alone, so it shares the cluster; new pods
// are created with dryRun=All.
func TestAdmissionWhileNoManagerRuns(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 300) // one pod, boosted in place to 300m at most
	ns := newNamespace(t)
	opts := manager.Options{Namespaces: []string{ns}, MetricsSource: "kubelet", KubeletThrottling: true}
	c, stop := runManager(t, opts)
	for _, file := range []string{cluster.AdmissionPolicyFile, cluster.RecreatePolicyFile} {
		installAdmissionPolicy(t, file, ns)
	}
	ctx := context.Background()
	dep := deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=20m", "--memory=24Mi").Requests("100m", "64Mi").Limits("200m", "128Mi"))
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(300))}
	})
	planned := func(p *v1alpha1.TailorPolicy) bool {
		return p.Status.Admission != nil && p.Status.Admission.ObservedGeneration == p.Generation
	}
	p := waitPolicy(t, c, ns, "web", 2*time.Minute, "a recommendation, and status.admission with the boost planned for this generation", func(p *v1alpha1.TailorPolicy) bool {
		return p.Status.Recommendation != nil && planned(p) && p.Status.Admission.Boost != ""
	})
	t.Logf("status.admission with the boost: %s", mustJSON(p.Status.Admission))

	// A new pod of the Deployment's ReplicaSet, as the ReplicaSet makes it.
	live := livePods(t, ns, "web", 1, nil)[0]
	owner := metav1.GetControllerOf(&live)
	if owner == nil {
		t.Fatalf("pod %s has no controller", live.Name)
	}
	newPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-dry-run", OwnerReferences: []metav1.OwnerReference{*owner},
			Labels: map[string]string{"app": "web", "pod-template-hash": live.Labels["pod-template-hash"]}},
		Spec: *dep.Spec.Template.Spec.DeepCopy(),
	}
	admitted := func(step string, ok func(*corev1.Pod) bool) {
		t.Helper()
		var last *corev1.Pod
		if err := admitUntil(ctx, newPod, func(created *corev1.Pod) bool { last = created; return ok(created) }); err != nil {
			var got any
			if last != nil {
				got = map[string]any{"resources": containersText(last)["app"], "annotations": last.Annotations}
			}
			t.Fatalf("%s: new pod admitted as %s: %v", step, mustJSON(got), err)
		}
	}
	admitted("the manager planned the boost", func(created *corev1.Pod) bool {
		return created.Annotations[v1alpha1.BoostAnnotation] != "" && created.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() > 100
	})

	stop()
	p = &v1alpha1.TailorPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.StartupBoost = nil
	if err := c.Update(ctx, p); err != nil {
		t.Fatalf("removing startupBoost: %v", err)
	}
	asTemplate := "100m/64Mi 200m/128Mi"
	admitted("startupBoost removed while no manager runs", func(created *corev1.Pod) bool {
		_, boosted := created.Annotations[v1alpha1.BoostAnnotation]
		_, sized := created.Annotations[v1alpha1.AdmittedAnnotation]
		return !boosted && !sized && containersText(created)["app"] == asTemplate
	})

	c, _ = runManager(t, opts)
	p = waitPolicy(t, c, ns, "web", time.Minute, "status.admission planned for the edited policy", planned)
	t.Logf("status.admission after the edit: %s", mustJSON(p.Status.Admission))
	if p.Status.Admission.Boost != "" {
		t.Errorf("status.admission planned without startupBoost boosts: %s", p.Status.Admission.Boost)
	}
	admitted("a manager planned for the edited policy", func(created *corev1.Pod) bool {
		if _, boosted := created.Annotations[v1alpha1.BoostAnnotation]; boosted {
			return false
		}
		// The recommendation may move between syncs: the entry as it is now.
		p := &v1alpha1.TailorPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil || !planned(p) {
			return false
		}
		entry := p.Status.Admission
		if len(entry.Containers) == 0 {
			return containersText(created)["app"] == asTemplate
		}
		got := created.Spec.Containers[0].Resources
		return created.Annotations[v1alpha1.AdmittedAnnotation] == "web: "+entry.Summary &&
			sameQuantities(entry.Containers[0].Requests, got.Requests) && sameQuantities(entry.Containers[0].Limits, got.Limits)
	})
}
