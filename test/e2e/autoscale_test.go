//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// The autoscaler end to end: the TailorPolicy controller runs in this
// process against the real apiserver, reads usage from the real kubelet and
// resizes real containers whose cgroups the tests read.

// startManager runs the policy controller for namespace ns, reading the
// kubelet, until the test ends and returns an uncached client that knows
// TailorPolicy.
func startManager(t *testing.T, ns string) client.Client {
	t.Helper()
	return startManagerWith(t, manager.Options{Namespaces: []string{ns}, MetricsSource: "kubelet", KubeletThrottling: true})
}

// startManagerWith is startManager with o's metrics source.
func startManagerWith(t *testing.T, o manager.Options) client.Client {
	t.Helper()
	c, _ := runManager(t, o)
	return c
}

// runManager is startManagerWith that also returns a function stopping the
// manager before the test ends, as a restart or a lost leadership does.
func runManager(t *testing.T, o manager.Options) (client.Client, func()) {
	t.Helper()
	// Tests share the node and the apiserver: a manager that saw every
	// namespace would act on other tests' policies, and theirs on its.
	if len(o.Namespaces) == 0 {
		t.Fatal("runManager: scope the manager to the test's namespace (Options.Namespaces)")
	}
	if o.SyncPeriod == 0 {
		o.SyncPeriod = 2 * time.Second
	}
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	// One manager per test, in one process: the controller name repeats.
	o.SkipNameValidation = true
	mgr, err := manager.New(restConfig, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	// The tests read what the apiserver has, not what the manager's cache
	// has seen yet.
	return apiClient(t), stop
}

// apiClient is a client of the apiserver, uncached, that knows tailor's
// types.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	scheme, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// installClusterObjects installs the cluster-wide objects the suite's tests
// share, once, before any test runs (TestMain): tailor's CRDs, and the
// VerticalPodAutoscaler CRD (TestVPAOnTheSameDeployment; no VPA component
// runs). A test that installed a cluster-wide object itself would change
// the cluster under the tests running beside it, so it would belong to the
// quiet phase (test/cluster/phase.go); and a manager looks for the VPA CRD
// once, as it starts, so installed by one test it would be seen by the
// managers started after that test and not by those started before. Both
// are left installed, as on a cluster where tailor runs.
func installClusterObjects(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	if err := cluster.InstallCRDs(ctx, dyn); err != nil {
		return fmt.Errorf("installing tailor's CRDs: %w", err)
	}
	if err := cluster.InstallVPACRD(ctx, dyn); err != nil {
		return fmt.Errorf("installing the VerticalPodAutoscaler CRD: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// applyPolicy creates a TailorPolicy selecting app=<name> in ns.
func applyPolicy(t *testing.T, c client.Client, ns, name string, mutate func(*v1alpha1.TailorPolicySpec)) *v1alpha1.TailorPolicy {
	t.Helper()
	p := cluster.Policy(ns, name, mutate)
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	return p
}

// labelled is a loadgen pod labelled app=<name>, as a workload's pod is.
func labelled(ns, name string, c ...*builder.ContainerWrapper) *corev1.Pod {
	p := loadgenPod(ns, name, c...)
	p.Labels = map[string]string{"app": name}
	return p
}

// waitPod polls the pod until cond holds or timeout, and returns it.
func waitPod(t *testing.T, pod *corev1.Pod, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v\nspec: %s\nstatus: %s", what, timeout, err, mustJSON(got.Spec.Containers[0].Resources), mustJSON(got.Status.ContainerStatuses))
	}
	return got
}

// reread is the pod as the apiserver has it now.
func reread(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := clientset.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// policySyncs is how many times this process's managers have synced
// policy ns/name (tailor_policy_syncs_total).
func policySyncs(ns, name string) float64 {
	return inProcessMetric("tailor_policy_syncs_total", map[string]string{"namespace": ns, "policy": name}).GetCounter().GetValue()
}

// holdsFor checks pod against hold until the manager has synced policy
// ns/name syncs more times, and fails the test at the first pod that breaks
// it. A window of syncs rather than of seconds: each sync is a chance to do
// what must not be done, so on a slow machine the window stretches with
// the manager instead of closing before it looked.
func holdsFor(t *testing.T, ns, name string, syncs float64, hold func(*corev1.Pod) error, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	before := policySyncs(ns, name)
	last := pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		if err := hold(p); err != nil {
			return false, err
		}
		return policySyncs(ns, name)-before >= syncs, nil
	})
	if err != nil {
		t.Fatalf("policy %s/%s over %v of %v syncs: %v", ns, name, policySyncs(ns, name)-before, syncs, err)
	}
	return last
}

// wantReaction waits for tailor_reaction_seconds{namespace,policy} in the
// in-process manager's registry to count pod's raises: at least one, never
// more than the resizes the pod has had (its generation), each a positive
// time. How long a reaction takes is make bench-e2e's figure.
func wantReaction(t *testing.T, ns, policy string, pod *corev1.Pod) {
	t.Helper()
	var count uint64
	var sum float64
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		if m := inProcessMetric("tailor_reaction_seconds", map[string]string{"namespace": ns, "policy": policy}); m != nil {
			count, sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		}
		return count > 0, nil
	})
	if err != nil {
		t.Fatalf("tailor_reaction_seconds{namespace=%q,policy=%q} has no observation: %v", ns, policy, err)
	}
	// Read after the histogram: every raise it counted is in this
	// generation.
	resizes := reread(t, pod).Generation - 1
	t.Logf("tailor_reaction_seconds: %d observation(s), mean %.1fs, for %d resize(s)", count, sum/float64(count), resizes)
	if int64(count) > resizes {
		t.Errorf("tailor_reaction_seconds counted %d reactions for %d resizes of pod %s", count, resizes, pod.Name)
	}
	if sum <= 0 {
		t.Errorf("tailor_reaction_seconds sums %.3fs over %d reactions: a reaction takes time", sum, count)
	}
}

// inProcessMetric is the series of metric name in this process's
// controller-runtime registry (the in-process managers') whose labels
// include labels; nil when there is none.
func inProcessMetric(name string, labels map[string]string) *dto.Metric {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return nil
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			return m
		}
	}
	return nil
}

func cpuLimitMillis(p *corev1.Pod) int64 {
	return p.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()
}

// cfsQuota is the cpu.cfs_quota_us the kubelet writes for the first
// container's CPU limit (the default 100ms period).
func cfsQuota(p *corev1.Pod) int64 { return cpuLimitMillis(p) * 100 }

// memoryLimit is the first container's memory limit in bytes, as
// memory.limit_in_bytes holds it.
func memoryLimit(p *corev1.Pod) int64 {
	return p.Spec.Containers[0].Resources.Limits.Memory().Value()
}

func cpuRequestMillis(p *corev1.Pod) int64 {
	return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
}

func TestAutoscaleRaisesThrottledCPUInPlaceWithinBounds(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 400) // raised up to maxAllowed 400m
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "hot", app().Args("--listen=:8080", "--cpu=800m", "--memory=24Mi").
		Requests("100m", "64Mi").Limits("200m", "256Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	before := containerStatus(pod, "app")
	start := time.Now()
	applyPolicy(t, c, ns, "hot", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m")},
		}}}
	})

	raised := waitPod(t, pod, 90*time.Second, "cpu limit raised", func(p *corev1.Pod) bool { return cpuLimitMillis(p) > 200 })
	recordConvergence(t, "throttled cpu: policy applied -> first raise sent", time.Since(start))
	waitCgroupFollowsSpec(t, raised, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)
	// The manager's reaction-latency histogram saw the raise.
	wantReaction(t, ns, "hot", pod)

	// Keeps raising while throttled, up to maxAllowed and never past it:
	// maxAllowed bounds the request, which the recommendation sizes, and
	// the limit keeps the workload's 1:2 ratio to it. The last step may stop
	// short of 400m by less than the 5% tolerance below which tailor does
	// not think a resize worth it (e.g. 395m).
	top := waitPod(t, pod, 120*time.Second, "cpu request raised to maxAllowed", func(p *corev1.Pod) bool { return cpuRequestMillis(p) >= 380 })
	if got := cpuRequestMillis(top); got > 400 {
		t.Errorf("cpu request = %dm, past maxAllowed 400m", got)
	}
	time.Sleep(8 * time.Second)
	final, err := clientset.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuRequestMillis(final); got > 400 {
		t.Errorf("cpu request went past maxAllowed: %dm", got)
	}
	if r, l := cpuRequestMillis(final), cpuLimitMillis(final); r*2 < l-2 || r*2 > l+2 {
		t.Errorf("request %dm and limit %dm lost the 1:2 ratio", r, l)
	}
	st := containerStatus(final, "app")
	if st.RestartCount != 0 || st.ContainerID != before.ContainerID {
		t.Errorf("container restarted: restarts %d, id %s -> %s", st.RestartCount, before.ContainerID, st.ContainerID)
	}
	if final.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("QoS class = %s, want Burstable", final.Status.QOSClass)
	}
	// Memory is not controlled by this policy.
	if got := final.Spec.Containers[0].Resources.Limits.Memory().String(); got != "256Mi" {
		t.Errorf("memory limit changed to %s though the policy controls cpu only", got)
	}
}

func TestAutoscaleLowersOnlyAfterStabilization(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 500) // 500m, then lowered
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "idle", app().Args("--listen=:8080", "--cpu=20m", "--memory=24Mi").
		Requests("500m", "64Mi").Limits("1", "256Mi")))
	const window = 25 * time.Second
	start := time.Now()
	applyPolicy(t, c, ns, "idle", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			Recommender: &v1alpha1.RecommenderOverrides{CPUWindow: &metav1.Duration{Duration: time.Minute}},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: window}}
	})
	lowered := waitPod(t, pod, 3*time.Minute, "cpu limit lowered", func(p *corev1.Pod) bool { return cpuLimitMillis(p) < 1000 })
	took := time.Since(start)
	recordConvergence(t, "idle cpu: policy applied -> first lowering", took)
	if took < window {
		t.Errorf("lowered after %s, before the %s stabilization window", took.Round(time.Second), window)
	}
	// The request follows the limit at the workload's own 1:2 ratio.
	res := lowered.Spec.Containers[0].Resources
	if r, l := res.Requests.Cpu().MilliValue(), res.Limits.Cpu().MilliValue(); r*2 < l-2 || r*2 > l+2 {
		t.Errorf("request %dm and limit %dm lost the 1:2 ratio", r, l)
	}
	waitCgroupFollowsSpec(t, lowered, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)
}

func TestAutoscaleOffModeOnlyRecommends(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // mode Off: never resized
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "watch", app().Args("--listen=:8080", "--cpu=800m").
		Requests("100m", "64Mi").Limits("200m", "256Mi")))
	p := applyPolicy(t, c, ns, "watch", func(s *v1alpha1.TailorPolicySpec) {
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
	})
	var got v1alpha1.TailorPolicy
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
			return false, err
		}
		return got.Status.Recommendation != nil && len(got.Status.Recommendation.ContainerRecommendations) > 0, nil
	})
	if err != nil {
		t.Fatalf("no recommendation published: %v; status %s", err, mustJSON(got.Status))
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionRecommendationProvided) {
		t.Errorf("RecommendationProvided not True: %s", mustJSON(got.Status.Conditions))
	}
	time.Sleep(6 * time.Second)
	fresh, err := clientset.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Generation != pod.Generation {
		t.Errorf("updateMode Off changed the pod: generation %d -> %d, resources %s", pod.Generation, fresh.Generation, mustJSON(fresh.Spec.Containers[0].Resources))
	}
}

func TestAutoscaleNeverRestartsAgainstPolicy(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 1000) // an 800m burner raised without a bound
	ns := newNamespace(t)
	c := startManager(t, ns)
	// Memory would be raised (the recommender keeps a margin above usage),
	// but changing it restarts the container and the policy does not allow it.
	pod := createRunningPod(t, labelled(ns, "strict", app().Args("--listen=:8080", "--cpu=800m", "--memory=48Mi").
		Requests("100m", "64Mi").Limits("200m", "64Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)))
	p := applyPolicy(t, c, ns, "strict", nil)

	raised := waitPod(t, pod, 90*time.Second, "cpu raised", func(p *corev1.Pod) bool { return cpuLimitMillis(p) > 200 })
	var got v1alpha1.TailorPolicy
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResizesBlocked)
		return cond != nil && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, "RestartContainer"), nil
	})
	if err != nil {
		t.Errorf("ResizesBlocked does not say why memory was held: %s", mustJSON(got.Status.Conditions))
	}
	if got := raised.Spec.Containers[0].Resources.Limits.Memory().String(); got != "64Mi" {
		t.Errorf("memory limit changed to %s under resizePolicy RestartContainer without allowRestart", got)
	}
	if st := containerStatus(raised, "app"); st.RestartCount != 0 {
		t.Errorf("restartCount = %d, want 0", st.RestartCount)
	}
}

func TestAutoscaleRaisesMemoryAfterOOMKill(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 50m
	ns := newNamespace(t)
	c := startManager(t, ns)
	// 96Mi under a 64Mi limit: the kernel kills it at every start.
	p := labelled(ns, "oom", app().Args("--listen=:8080", "--memory=96Mi").
		Requests("50m", "32Mi").Limits("200m", "64Mi").
		ResizePolicy(corev1.ResourceMemory, corev1.NotRequired))
	if _, err := clientset.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, p, 60*time.Second, "first OOM kill", func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.Reason == "OOMKilled"
	})
	oomAt := time.Now()
	applyPolicy(t, c, ns, "oom", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Second}
	})
	raised := waitPod(t, p, 60*time.Second, "memory limit raised", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Limits.Memory().Value() > 64<<20
	})
	recordConvergence(t, "OOM kill seen -> memory raise sent", time.Since(oomAt))
	lim := raised.Spec.Containers[0].Resources.Limits.Memory()
	t.Logf("memory limit after OOM: %s", lim.String())
	// It keeps rising until the container fits, then the container runs.
	waitPod(t, p, 3*time.Minute, "container running with enough memory", func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return p.Spec.Containers[0].Resources.Limits.Memory().Value() >= 96<<20 && st != nil && st.State.Running != nil && st.Ready
	})
}

func TestAutoscaleRaisesMemoryAheadOfGrowth(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 50m; memory only
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "grow", app().Args("--listen=:8080", "--memory=32Mi").
		Requests("50m", "64Mi").Limits("200m", "128Mi").
		ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	applyPolicy(t, c, ns, "grow", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}}}
		s.Behavior.MinResizeInterval = &metav1.Duration{Duration: 2 * time.Second}
	})
	// Grow in steps a sync or two apart, past every limit the pod has had.
	for mi := 64; mi <= 448; mi += 64 {
		p, err := clientset.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lim := p.Spec.Containers[0].Resources.Limits.Memory().Value(); int64(mi)<<20 >= lim {
			t.Fatalf("growing to %dMi would cross the %dMi limit: tailor did not raise ahead", mi, lim>>20)
		}
		setMemory(t, p, fmt.Sprintf("%dMi", mi))
		time.Sleep(8 * time.Second)
	}
	final := waitPod(t, pod, 30*time.Second, "memory limit above the grown usage", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Limits.Memory().Value() > 448<<20
	})
	if st := containerStatus(final, "app"); st.RestartCount != 0 || st.LastTerminationState.Terminated != nil {
		t.Errorf("container restarted (%d) or was killed: %s", st.RestartCount, mustJSON(st.LastTerminationState))
	}
	waitCgroupFollowsSpec(t, final, "app", "memory", "memory.limit_in_bytes", memoryLimit)
}

// setMemory asks the pod's load generator to hold size of memory.
func setMemory(t *testing.T, p *corev1.Pod, size string) {
	t.Helper()
	if err := cluster.Drive(context.Background(), p, "/memory?size="+size); err != nil {
		t.Fatal(err)
	}
}
