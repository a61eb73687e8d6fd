//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/cluster"
)

// agentSyncPeriod is long on purpose: every reaction below must come from
// the agent waking the manager, not from a periodic sync.
const agentSyncPeriod = time.Minute

// startAgent deploys the node agent (config/components/agent) in ns and a
// manager in this process reading it, with the kubelet as fallback; the
// agent reports over TLS, checking the manager against the CA the manager
// publishes in ns. When the test fails it prints what the agent and the
// manager saw.
func startAgent(t *testing.T, ns string) client.Client {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ag, err := cluster.DeployAgent(context.Background(), clientset, ns, port)
	if err != nil {
		t.Fatal(err)
	}
	rec := recommend.DefaultConfig()
	// A thin memory margin, so an idle pod at half its limit is left
	// alone and only the ramp can raise it.
	rec.MemoryMinMargin, rec.MemoryJitterMargin = 16<<20, 0
	// The registry is the process's: an earlier test's manager counted
	// there too.
	accepted := func() float64 { return agentReports("ok") + agentReports("urgent") }
	before := accepted()
	c := startManagerWith(t, manager.Options{Namespaces: []string{ns},
		MetricsSource: "agent", AgentAddr: ":" + itoa(port), AgentServiceAccount: ag.ServiceAccount, AgentService: ag.Service,
		AgentFallback: "kubelet", KubeletThrottling: true, SyncPeriod: agentSyncPeriod, Recommender: &rec,
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpAgentState(t, c, ns, ag)
		}
	})
	// The agent reaches this process and is let in: otherwise every
	// figure below would be the kubelet fallback's.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		return accepted() > before, nil
	}); err != nil {
		t.Fatalf("no report from the agent accepted within a minute (refused: unauthenticated %v, forbidden %v, invalid %v, throttled %v; the agent's log says whether it has the managers' CA and why a push failed)",
			agentReports("unauthenticated"), agentReports("forbidden"), agentReports("invalid"), agentReports("throttled"))
	}
	return c
}

// dumpAgentState logs the policies' status, the namespace's events, the
// agent's and the manager's wake-up counters and the agent's log.
func dumpAgentState(t *testing.T, c client.Client, ns string, ag *cluster.Agent) {
	ctx := context.Background()
	var policies v1alpha1.TailorPolicyList
	if err := c.List(ctx, &policies, client.InNamespace(ns)); err == nil {
		for _, p := range policies.Items {
			t.Logf("policy %s status: %s", p.Name, mustJSON(p.Status.Conditions))
		}
	}
	if events, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range events.Items {
			// Events recorded through events.k8s.io carry EventTime, not
			// the count and timestamps.
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			t.Logf("event %s %s %s/%s %s: %s", at.Format(time.TimeOnly), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	var counts []string
	for _, r := range []string{"ok", "urgent", "unauthenticated", "forbidden", "invalid", "throttled", "error"} {
		counts = append(counts, fmt.Sprintf("%s=%v", r, agentReports(r)))
	}
	for _, r := range []string{"queued", "dropped"} {
		counts = append(counts, fmt.Sprintf("wake %s=%v", r, inProcessMetric("tailor_agent_wakeups_total", map[string]string{"result": r}).GetCounter().GetValue()))
	}
	t.Logf("tailor_agent_reports_total and tailor_agent_wakeups_total in this process: %s", strings.Join(counts, " "))
	logs, err := ag.Logs(ctx, 60)
	t.Logf("the agent's last log lines (err %v):\n%s", err, logs)
}

// agentReports is tailor_agent_reports_total{result} in this process.
func agentReports(result string) float64 {
	return inProcessMetric("tailor_agent_reports_total", map[string]string{"result": result}).GetCounter().GetValue()
}

func itoa(i int) string { return strconv.Itoa(i) }

// waitRecommending waits until the policy recommends: the agent's reports
// reach the manager and name the policy's containers.
func waitRecommending(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var p v1alpha1.TailorPolicy
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionRecommendationProvided), nil
	})
	if err != nil {
		t.Fatalf("policy %s never recommended from the agent's reports: %v", name, err)
	}
}

// Memory grown at 25 MiB/s from 128Mi toward its 320Mi limit, which it
// would reach within 8s, sooner than the kubelet's cAdvisor can see (10-20s
// between samples): the agent sees it within a second, wakes the manager
// (whose sync period is a minute) and the limit is raised before the
// kernel would kill at it. The container is never OOM killed and never
// restarted, and the cgroup has the new limit. (At 50 MiB/s from half the
// limit, 2.6s, a CI run beside the unit tests lost the race: the agent,
// the manager and the kubelet on a machine with no idle core took 8s.
// How fast the agent reacts is measured apart, make bench-e2e.)
func TestAgentRaisesMemoryBeforeTheOOMKill(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startAgent(t, ns)
	const mib = int64(1 << 20)
	pod := createRunningPod(t, labelled(ns, "ramp", app().Args("--listen=:8080", "--memory=128Mi").
		Requests("50m", "320Mi").Limits("200m", "320Mi").
		ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	// The load generator fills its 128Mi at start, fast: the agent would
	// take that for a ramp (and raise; a safe mistake) if the policy came
	// while a report still carries that growth (3s of samples, and a
	// report every 5s).
	time.Sleep(10 * time.Second)
	applyPolicy(t, c, ns, "ramp", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}}}
		s.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Second}
	})
	waitRecommending(t, c, ns, "ramp")
	p, err := clientset.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lim := p.Spec.Containers[0].Resources.Limits.Memory().Value(); lim != 320*mib {
		t.Fatalf("memory limit %dMi before the ramp: the idle pod was resized", lim/mib)
	}
	start := time.Now()
	if err := cluster.Ramp(context.Background(), p, 128*mib, 448*mib, 25*mib); err != nil {
		t.Fatalf("ramping memory (the load generator died: OOM killed?): %v", err)
	}
	t.Logf("ramp 128Mi -> 448Mi at 25Mi/s took %s", time.Since(start).Round(100*time.Millisecond))
	final := waitPod(t, pod, 30*time.Second, "memory limit above the ramp's end", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Limits.Memory().Value() > 448*mib
	})
	st := containerStatus(final, "app")
	if st.RestartCount != 0 || st.LastTerminationState.Terminated != nil {
		t.Fatalf("the container was killed or restarted (%d): %s", st.RestartCount, mustJSON(st.LastTerminationState))
	}
	// The agent may raise again while this reads the cgroup (a second
	// raise on the ramp's tail): the cgroup must hold whatever the spec
	// says then.
	final = waitCgroupFollowsSpec(t, final, "app", "memory", "memory.limit_in_bytes", memoryLimit)
	t.Logf("memory limit 320Mi -> %dMi, no OOM kill", memoryLimit(final)/mib)
	// The load generator still answers: it was not killed between polls.
	if err := cluster.Drive(context.Background(), final, "/status"); err != nil {
		t.Errorf("load generator after the ramp: %v", err)
	}
}

// A CPU step on a throttled pod is answered within seconds, by a wake-up
// and not by the minute's sync: the agent sees the throttling in its next
// sample.
func TestAgentRaisesThrottledCPUWithinSeconds(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startAgent(t, ns)
	pod := createRunningPod(t, labelled(ns, "step", app().Args("--listen=:8080", "--cpu=20m", "--memory=24Mi").
		Requests("100m", "64Mi").Limits("200m", "64Mi")))
	applyPolicy(t, c, ns, "step", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
		s.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Second}
	})
	waitRecommending(t, c, ns, "step")
	// Idle long enough for tailor to have settled: nothing in flight.
	time.Sleep(5 * time.Second)
	before, err := clientset.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wakes := func() float64 {
		return inProcessMetric("tailor_agent_wakeups_total", map[string]string{"result": "queued"}).GetCounter().GetValue()
	}
	wokenBefore := wakes()
	start := time.Now()
	if err := cluster.Drive(context.Background(), before, "/cpu?millicores=1000"); err != nil {
		t.Fatal(err)
	}
	raised := waitPod(t, pod, agentSyncPeriod/2, "cpu limit raised", func(p *corev1.Pod) bool {
		return cpuLimitMillis(p) > cpuLimitMillis(before)
	})
	// How soon is a figure for make bench-e2e, measured over trials; what
	// the gate proves is the mechanism: the agent's report woke the
	// manager's sync of this policy (only this test's manager runs now).
	t.Logf("cpu limit %dm -> %dm %s after the step (sync period %s)", cpuLimitMillis(before), cpuLimitMillis(raised), time.Since(start).Round(100*time.Millisecond), agentSyncPeriod)
	if woken := wakes() - wokenBefore; woken < 1 {
		t.Errorf("the raise came without a wake-up from the agent (tailor_agent_wakeups_total{result=queued} +%v): a periodic sync made it", woken)
	}
}
