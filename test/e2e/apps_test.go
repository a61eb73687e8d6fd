//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// realApp is a real application as hack/apps.sh packs it, and the client
// that loads it from a pod of its own.
type realApp struct {
	name, image string
	// server is the application's container: its command (empty: the
	// image's), the user it runs as, and what it requests at first.
	command  []string
	user     int64
	requests [2]string
	limits   [2]string
	client   string
}

// The applications: each starts small (100m of cpu, limited at 200m, as a
// workload sized for its quiet hours is) and is driven past it.
var realApps = []realApp{{
	// Redis, its dataset growing under SETs of 512-byte values over 200,000
	// keys (about 100 MiB) while GETs read it.
	name: "redis", image: "tailor.local/redis:7",
	requests: [2]string{"100m", "64Mi"}, limits: [2]string{"200m", "320Mi"},
	client: `while true; do redis-benchmark -h "$SERVER" -q -t set,get -n 200000 -c 16 -P 4 -d 512 -r 200000; done`,
}, {
	// PostgreSQL 15 under pgbench's TPC-B-like transactions, scale 5.
	name: "postgres", image: "tailor.local/postgres:15", user: 999,
	requests: [2]string{"100m", "128Mi"}, limits: [2]string{"200m", "512Mi"},
	client: `export PATH=/usr/lib/postgresql/15/bin:$PATH
until pg_isready -q -h "$SERVER" -U postgres; do sleep 1; done
pgbench -q -h "$SERVER" -U postgres -i -s 5 postgres
while true; do pgbench -h "$SERVER" -U postgres -c 8 -j 2 -T 30 postgres | grep -E 'tps|latency average'; done`,
}, {
	// A JVM service with a fixed heap (G1, -Xmx96m) serving requests of
	// 20 ms of CPU that allocate as they go, 8 at a time (test/images/jvm
	// Load, which reports its latency every 10 s).
	name: "jvm", image: "tailor.local/jvm:17",
	command:  []string{"/opt/java/bin/java", "-Xmx96m", "-XX:+UseG1GC", "-jar", "/app/service.jar"},
	requests: [2]string{"100m", "160Mi"}, limits: [2]string{"200m", "480Mi"},
	client: `exec /opt/java/bin/java -Xmx32m -cp /app/service.jar Load "http://$SERVER:8080/work?ms=20&kb=256" 8`,
}}

// TestAppsRaisedAndLoweredInPlace runs each real application under a
// TailorPolicy through idle, load and idle again: tailor raises its cpu in
// place under load and lowers it in place once the load is gone, and the
// application is never restarted nor OOM-killed on the way (issue #36's
// mechanism check; the latency benchmark is apart from it).
func TestAppsRaisedAndLoweredInPlace(t *testing.T) {
	cluster.Apps(t)
	for _, a := range realApps {
		t.Run(a.name, func(t *testing.T) { runRealApp(t, a) })
	}
}

func runRealApp(t *testing.T, a realApp) {
	ns := newNamespace(t)
	c := startManager(t, ns)
	server := builder.Container("app").Image(a.image).
		Requests(a.requests[0], a.requests[1]).Limits(a.limits[0], a.limits[1]).
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)
	if len(a.command) > 0 {
		server.Command(a.command...)
	}
	pod := labelled(ns, a.name, server)
	if a.user != 0 {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &a.user, RunAsGroup: &a.user}
	}
	pod = createRunningPod(t, pod)
	before := *containerStatus(pod, "app")

	const window = 30 * time.Second
	applyPolicy(t, c, ns, a.name, func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*",
			MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")},
			Recommender:   &v1alpha1.RecommenderOverrides{CPUWindow: &metav1.Duration{Duration: time.Minute}},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: window}}
	})

	// The load, from a pod tailor does not manage (no app label), sized
	// to leave the server the rest of the node.
	load := loadgenPod(ns, a.name+"-load", builder.Container("load").Image(a.image).
		Command("/bin/sh", "-c", a.client).Requests("300m", "64Mi").Limits("500m", "256Mi"))
	load.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SERVER", Value: pod.Status.PodIP}}
	if a.user != 0 {
		load.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &a.user, RunAsGroup: &a.user}
	}
	load = createRunningPod(t, load)
	start := time.Now()
	raised := waitPod(t, pod, 4*time.Minute, a.name+": cpu raised in place under load", func(p *corev1.Pod) bool { return cpuLimitMillis(p) > 200 })
	t.Logf("%s: cpu request %dm, limit %dm %s after the load started; memory request %s",
		a.name, cpuRequestMillis(raised), cpuLimitMillis(raised), time.Since(start).Round(time.Second), raised.Spec.Containers[0].Resources.Requests.Memory())
	waitCgroupFollowsSpec(t, raised, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)
	// A minute more of load: the raises that follow, and what the client
	// measured at its peak.
	time.Sleep(time.Minute)
	peak := reread(t, raised)
	t.Logf("%s: at the peak cpu request %dm, limit %dm; memory request %s, limit %s; the client said:\n%s", a.name,
		cpuRequestMillis(peak), cpuLimitMillis(peak), peak.Spec.Containers[0].Resources.Requests.Memory(),
		peak.Spec.Containers[0].Resources.Limits.Memory(), logTail(t, load, 4))

	if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), load.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	top := cpuLimitMillis(peak)
	lowered := waitPod(t, pod, 5*time.Minute, a.name+": cpu lowered in place once idle", func(p *corev1.Pod) bool { return cpuLimitMillis(p) < top })
	t.Logf("%s: lowered to cpu request %dm, limit %dm %s after the load stopped", a.name,
		cpuRequestMillis(lowered), cpuLimitMillis(lowered), time.Since(stopped).Round(time.Second))
	waitCgroupFollowsSpec(t, lowered, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)

	final := reread(t, lowered)
	st := containerStatus(final, "app")
	if st.RestartCount != 0 || st.ContainerID != before.ContainerID {
		t.Errorf("%s restarted: restarts %d, container %s -> %s (last state %s)", a.name, st.RestartCount, before.ContainerID, st.ContainerID, mustJSON(st.LastTerminationState))
	}
	if term := st.LastTerminationState.Terminated; term != nil && term.Reason == "OOMKilled" {
		t.Errorf("%s was OOM-killed at %s", a.name, term.FinishedAt)
	}
	if final.UID != pod.UID {
		t.Errorf("%s was recreated", a.name)
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
