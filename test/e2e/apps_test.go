//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// TestAppsRaisedAndLoweredInPlace runs each real application under a
// TailorPolicy through idle, load and idle again: tailor raises its cpu in
// place under load and lowers it in place once the load is gone, and the
// application is never restarted nor OOM-killed on the way (issue #36's
// mechanism check; the latency benchmark, make bench-e2e, is apart from
// it). The applications run side by side as -parallel allows: the gate
// runs Redis, PostgreSQL and the JVM at once, make e2e-apps each alone.
func TestAppsRaisedAndLoweredInPlace(t *testing.T) {
	cluster.Apps(t)
	t.Parallel()
	for _, a := range cluster.RealApps {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			runRealApp(t, a)
		})
	}
}

func runRealApp(t *testing.T, a cluster.App) {
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := labelled(ns, a.Name, a.Server())
	a.RunAs(pod)
	pod = createRunningPod(t, pod)
	before := *containerStatus(pod, "app")

	// Half the benchmark's quiet (its minute's window is the least a
	// policy takes): the check's lowering comes sooner.
	applyPolicy(t, c, ns, a.Name, cluster.AppPolicyOver(time.Minute, 15*time.Second))

	// The load, from a pod tailor does not manage, at its peak until it
	// is deleted.
	load := a.Client(ns, a.Name+"-load", pod.Status.PodIP, cluster.Stage{Name: "peak", Clients: a.Peak, Seconds: 3600})
	load = createRunningPod(t, load)
	start := time.Now()
	raised := waitPod(t, pod, 4*time.Minute, a.Name+": cpu raised in place under load", func(p *corev1.Pod) bool { return cpuLimitMillis(p) > 200 })
	t.Logf("%s: cpu request %dm, limit %dm %s after the load started; memory request %s",
		a.Name, cpuRequestMillis(raised), cpuLimitMillis(raised), time.Since(start).Round(time.Second), raised.Spec.Containers[0].Resources.Requests.Memory())
	waitCgroupFollowsSpec(t, raised, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)
	// A little more load: a raise that follows, and a line of what the
	// client measured (its figures against a fixed size are the
	// benchmark's, make bench-e2e).
	time.Sleep(10 * time.Second)
	peak := reread(t, raised)
	t.Logf("%s: at the peak cpu request %dm, limit %dm; memory request %s, limit %s; the client said:\n%s", a.Name,
		cpuRequestMillis(peak), cpuLimitMillis(peak), peak.Spec.Containers[0].Resources.Requests.Memory(),
		peak.Spec.Containers[0].Resources.Limits.Memory(), logTail(t, load, 4))

	if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), load.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	top := cpuLimitMillis(peak)
	lowered := waitPod(t, pod, 5*time.Minute, a.Name+": cpu lowered in place once idle", func(p *corev1.Pod) bool { return cpuLimitMillis(p) < top })
	t.Logf("%s: lowered to cpu request %dm, limit %dm %s after the load stopped", a.Name,
		cpuRequestMillis(lowered), cpuLimitMillis(lowered), time.Since(stopped).Round(time.Second))
	waitCgroupFollowsSpec(t, lowered, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)

	final := reread(t, lowered)
	st := containerStatus(final, "app")
	if st.RestartCount != 0 || st.ContainerID != before.ContainerID {
		t.Errorf("%s restarted: restarts %d, container %s -> %s (last state %s)", a.Name, st.RestartCount, before.ContainerID, st.ContainerID, mustJSON(st.LastTerminationState))
	}
	if term := st.LastTerminationState.Terminated; term != nil && term.Reason == "OOMKilled" {
		t.Errorf("%s was OOM-killed at %s", a.Name, term.FinishedAt)
	}
	if final.UID != pod.UID {
		t.Errorf("%s was recreated", a.Name)
	}
}

// logTail is the last n lines the pod's first container logged.
func logTail(t *testing.T, p *corev1.Pod, n int) string {
	t.Helper()
	lines := int64(n)
	b, err := clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &lines}).Do(context.Background()).Raw()
	if err != nil {
		return fmt.Sprintf("(its log: %v)", err)
	}
	return strings.TrimRight(string(bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))), "\n")
}

// TestAppsJVMLimitKeptAtItsHeapReach: a JVM whose heap may grow to 256Mi
// (-Xmx256m), idle at a fraction of it, has its memory lowered in place,
// but its limit no further than the heap's reach (256Mi, a quarter more and
// 64Mi outside the heap: 384Mi), though its working set alone would let the
// limit go lower (the tail of its start-up, about 275Mi); the Resized event
// says why. Then the service fills its heap (160 MiB held): it is not
// killed, and tailor raises it as it grows.
func TestAppsJVMLimitKeptAtItsHeapReach(t *testing.T) {
	cluster.Apps(t)
	t.Parallel()
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := createRunningPod(t, labelled(ns, "heap", builder.Container("app").Image("tailor.local/jvm:17").
		Command("/opt/java/bin/java", "-Xmx256m", "-XX:+UseG1GC", "-jar", "/app/service.jar").
		Requests("200m", "512Mi").Limits("400m", "1Gi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	before := *containerStatus(pod, "app")
	applyPolicy(t, c, ns, "heap", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 20 * time.Second}}
	})
	reach := resource.MustParse("384Mi")
	lowered := waitPod(t, pod, 4*time.Minute, "memory lowered", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Memory().Cmp(resource.MustParse("512Mi")) < 0
	})
	got := lowered.Spec.Containers[0].Resources
	t.Logf("lowered to memory request %s, limit %s", got.Requests.Memory(), got.Limits.Memory())
	if got.Limits.Memory().Cmp(reach) < 0 {
		t.Fatalf("memory limit lowered to %s, under the heap's reach %s", got.Limits.Memory(), reach.String())
	}
	if lim := got.Limits.Memory(); lim.Cmp(reach) == 0 {
		waitEventFor(t, ns, pod.Name, "Resized", "limit kept at the JVM's reach 384Mi (-Xmx256m")
	} else {
		// The working set's own ratio kept the limit above the reach:
		// the rule was not needed this time, and the test proves nothing.
		t.Fatalf("memory limit %s above the heap's reach %s: the JVM held more than the test expects of an idle service", lim, reach.String())
	}
	waitCgroupFollowsSpec(t, lowered, "app", "memory", "memory.limit_in_bytes", memoryLimit)

	// The heap fills: 160 MiB held, 20 at a time.
	for range 8 {
		if err := cluster.Drive(context.Background(), pod, "/hold?mb=20"); err != nil {
			t.Fatalf("the service did not take its heap's fill: %v", err)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(10 * time.Second)
	final := reread(t, pod)
	st := containerStatus(final, "app")
	if st.RestartCount != 0 || st.ContainerID != before.ContainerID {
		t.Errorf("the JVM restarted once its heap filled: restarts %d, last state %s", st.RestartCount, mustJSON(st.LastTerminationState))
	}
	t.Logf("with its heap full: memory request %s, limit %s", final.Spec.Containers[0].Resources.Requests.Memory(), final.Spec.Containers[0].Resources.Limits.Memory())
}

// TestAppsAgentMovesZGCSoftHeapBound: the node agent in its JVM mode
// (config/components/agent-jvm-softmax) moves a ZGC JVM's soft heap bound
// with its container's memory limit, on the real JVM image, without
// pods/exec (this test reads the JVM's flags with jcmd in the container, the
// agent does not): under a limit below its -Xmx the bound is set under the
// limit, beside the measured non-heap and the headroom; once tailor raises
// the limit (the policy's minAllowed), the bound rises with it, up to the
// -Xmx. A G1 JVM beside it, whose collector ignores the bound, is left at
// the JVM's own.
func TestAppsAgentMovesZGCSoftHeapBound(t *testing.T) {
	cluster.Apps(t)
	ns := newNamespace(t)
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ag, err := cluster.DeployAgent(context.Background(), clientset, ns, port, "config/components/agent-jvm-softmax")
	if err != nil {
		t.Fatal(err)
	}
	c := startManagerWith(t, manager.Options{Namespaces: []string{ns},
		MetricsSource: "agent", AgentAddr: ":" + itoa(port), AgentServiceAccount: ag.ServiceAccount, AgentService: ag.Service,
		AgentFallback: "kubelet", SyncPeriod: 10 * time.Second,
	})
	jvmPod := func(name, collector string) *corev1.Pod {
		return createRunningPod(t, labelled(ns, name, builder.Container("app").Image("tailor.local/jvm:17").
			Command("/opt/java/bin/java", "-Xmx512m", collector, "-jar", "/app/service.jar").
			Requests("100m", "256Mi").Limits("400m", "384Mi").
			ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	}
	zgc, g1 := jvmPod("zgc", "-XX:+UseZGC"), jvmPod("g1", "-XX:+UseG1GC")
	const mi = int64(1 << 20)

	// Under 384Mi, the bound comes down from the -Xmx's 512Mi to what the
	// limit leaves.
	var first int64
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		first = softMaxHeapSize(t, zgc)
		return first < 384*mi, nil
	}); err != nil {
		t.Fatalf("the ZGC JVM's SoftMaxHeapSize is %dMi under a 384Mi limit: the agent did not set it (agent's log:\n%s)", first/mi, agentLog(ag))
	}
	t.Logf("under a 384Mi limit the agent set the ZGC JVM's SoftMaxHeapSize to %dMi", first/mi)

	// tailor raises the request to the policy's floor, 768Mi, and the
	// limit with it at the pod's 1.5x ratio; the bound follows, up to the
	// -Xmx.
	applyPolicy(t, c, ns, "zgc", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
			MinAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")},
		}}}
	})
	raised := waitPod(t, zgc, 3*time.Minute, "memory raised to the policy's floor", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Limits.Memory().Value() > 384*mi
	})
	waitCgroupFollowsSpec(t, raised, "app", "memory", "memory.limit_in_bytes", memoryLimit)
	var after int64
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		after = softMaxHeapSize(t, zgc)
		return after > first, nil
	}); err != nil {
		t.Fatalf("the limit rose to %s and the ZGC JVM's SoftMaxHeapSize stayed %dMi (agent's log:\n%s)", raised.Spec.Containers[0].Resources.Limits.Memory(), after/mi, agentLog(ag))
	}
	if after > 512*mi {
		t.Errorf("SoftMaxHeapSize %dMi, above the -Xmx 512Mi", after/mi)
	}
	t.Logf("with the limit raised to %s, SoftMaxHeapSize %dMi -> %dMi", raised.Spec.Containers[0].Resources.Limits.Memory(), first/mi, after/mi)

	// G1 ignores the bound: the agent leaves the JVM's own (its -Xmx).
	if got := softMaxHeapSize(t, g1); got != 512*mi {
		t.Errorf("the G1 JVM's SoftMaxHeapSize is %dMi, want its own 512Mi", got/mi)
	}
	for _, p := range []*corev1.Pod{zgc, g1} {
		if st := containerStatus(reread(t, p), "app"); st.RestartCount != 0 {
			t.Errorf("%s restarted: %s", p.Name, mustJSON(st.LastTerminationState))
		}
	}
}

// softMaxHeapSize is the JVM's SoftMaxHeapSize as jcmd reads it in the
// container, the JVM being its pid 1.
func softMaxHeapSize(t *testing.T, p *corev1.Pod) int64 {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", cluster.Kubeconfig(), "-n", p.Namespace, "exec", p.Name, "-c", "app", "--",
		"/opt/java/bin/jcmd", "-J-Xmx16m", "1", "VM.flags", "-all").CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd in %s: %v: %s", p.Name, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		// "size_t SoftMaxHeapSize = 536870912 {manageable} {default}"
		if len(f) >= 4 && f[1] == "SoftMaxHeapSize" {
			v, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				t.Fatalf("jcmd in %s: %q", p.Name, line)
			}
			return v
		}
	}
	t.Fatalf("jcmd in %s printed no SoftMaxHeapSize:\n%s", p.Name, out)
	return 0
}

// agentLog is the agent's last lines, for a failure.
func agentLog(a *cluster.Agent) string {
	s, err := a.Logs(context.Background(), 30)
	if err != nil {
		return err.Error()
	}
	return s
}
