//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tailorhq/tailor/test/cluster"
)

const (
	nodeName      = "tailor-dev"
	loadgenImage  = cluster.LoadgenImage
	cgroupRoot    = "/sys/fs/cgroup"
	podStartLimit = 90 * time.Second
	resizeLimit   = 60 * time.Second
)

var (
	kubeconfig = flag.String("e2e.kubeconfig", cluster.Kubeconfig(), "admin kubeconfig of the local cluster")

	restConfig *rest.Config
	clientset  *kubernetes.Clientset

	// convergence collects how long each resize took, for the suite's report.
	convergence   = map[string]time.Duration{}
	convergenceMu sync.Mutex
)

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	restConfig, clientset, err = cluster.Connect(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", "e2e", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err = installClusterObjects(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", "e2e", err)
		os.Exit(1)
	}
	closeLog, err := openManagerLog()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", "e2e", err)
		os.Exit(1)
	}
	code := m.Run()
	closeLog()
	reportConvergence()
	os.Exit(code)
}

func reportConvergence() {
	convergenceMu.Lock()
	defer convergenceMu.Unlock()
	if len(convergence) == 0 {
		return
	}
	names := make([]string, 0, len(convergence))
	for n := range convergence {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Println("resize convergence (patch accepted -> status caught up):")
	for _, n := range names {
		fmt.Printf("  %-60s %6.2fs\n", n, convergence[n].Seconds())
	}
}

func recordConvergence(t *testing.T, what string, d time.Duration) {
	t.Helper()
	t.Logf("%s converged in %.2fs", what, d.Seconds())
	convergenceMu.Lock()
	convergence[t.Name()+": "+what] = d
	convergenceMu.Unlock()
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + rand.String(5)
	ns := cluster.Namespace(t, clientset, name)
	logOnFailure(t, ns)
	return ns
}

// createRunningPod creates pod and waits until all its containers run.
func createRunningPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	created, err := clientset.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return waitRunning(t, created)
}

func waitRunning(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, podStartLimit, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		if p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || !cs.Ready {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not running after %s: %v\nstatus: %s", pod.Namespace, pod.Name, podStartLimit, err, mustJSON(got.Status))
	}
	return got
}

// resizePatch sends a strategic merge patch to the pod's resize subresource.
func resizePatch(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, patch string) (*corev1.Pod, error) {
	return cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
}

// containerPatch builds a resize patch for one container.
func containerPatch(container string, requests, limits map[string]string) string {
	res := map[string]any{}
	if len(requests) > 0 {
		res["requests"] = requests
	}
	if len(limits) > 0 {
		res["limits"] = limits
	}
	return mustJSON(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": container, "resources": res}}}})
}

// resizeDone reports whether the kubelet has actuated the pod's current spec:
// observedGeneration caught up, no pending or in-progress condition, and each
// container's reported resources equal to its spec.
func resizeDone(p *corev1.Pod) (bool, string) {
	if p.Status.ObservedGeneration < p.Generation {
		return false, fmt.Sprintf("observedGeneration %d < generation %d", p.Status.ObservedGeneration, p.Generation)
	}
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return false, fmt.Sprintf("%s %s: %s", c.Type, c.Reason, c.Message)
		}
	}
	for _, c := range p.Spec.Containers {
		st := containerStatus(p, c.Name)
		if st == nil || st.Resources == nil {
			return false, "container " + c.Name + " reports no resources"
		}
		if !sameQuantities(c.Resources.Requests, st.Resources.Requests) || !sameQuantities(c.Resources.Limits, st.Resources.Limits) {
			return false, fmt.Sprintf("container %s: spec %v/%v, status %v/%v", c.Name, c.Resources.Requests, c.Resources.Limits, st.Resources.Requests, st.Resources.Limits)
		}
	}
	return true, ""
}

func sameQuantities(want, got corev1.ResourceList) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		w, wok := want[r]
		g, gok := got[r]
		if wok != gok || (wok && w.Cmp(g) != 0) {
			return false
		}
	}
	return true
}

// waitResized waits for the kubelet to finish the resize and returns the pod
// and how long that took from start.
func waitResized(t *testing.T, pod *corev1.Pod, start time.Time) (*corev1.Pod, time.Duration) {
	t.Helper()
	var got *corev1.Pod
	var why string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, resizeLimit, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		var done bool
		done, why = resizeDone(p)
		return done, nil
	})
	if err != nil {
		t.Fatalf("resize of %s/%s not done after %s: %v; last state: %s", pod.Namespace, pod.Name, resizeLimit, err, why)
	}
	return got, time.Since(start)
}

// waitCondition waits for a pod condition of the given type and reason. A
// failure also says what explain, if not nil, returns then.
func waitCondition(t *testing.T, pod *corev1.Pod, typ corev1.PodConditionType, reason string, timeout time.Duration, explain func() string) corev1.PodCondition {
	t.Helper()
	var found corev1.PodCondition
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		for _, c := range p.Status.Conditions {
			if c.Type == typ && c.Status == corev1.ConditionTrue && c.Reason == reason {
				found = c
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		state := "never read"
		if last != nil {
			var conds []string
			for _, c := range last.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
			}
			state = fmt.Sprintf("conditions: %s; containers' resources: spec %s, status %s", strings.Join(conds, ", "),
				mustJSON(containerResources(last.Spec.Containers)), mustJSON(statusResources(last.Status.ContainerStatuses)))
		}
		if explain != nil {
			state += "\n" + explain()
		}
		t.Fatalf("pod %s/%s never had condition %s reason %s: %v; %s", pod.Namespace, pod.Name, typ, reason, err, state)
	}
	return found
}

func containerResources(cs []corev1.Container) map[string]corev1.ResourceRequirements {
	m := make(map[string]corev1.ResourceRequirements, len(cs))
	for _, c := range cs {
		m[c.Name] = c.Resources
	}
	return m
}

func statusResources(cs []corev1.ContainerStatus) map[string]*corev1.ResourceRequirements {
	m := make(map[string]*corev1.ResourceRequirements, len(cs))
	for _, c := range cs {
		m[c.Name] = c.Resources
	}
	return m
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// cgroupDir finds the container's cgroup v1 directory for a controller on
// this host. The kubelet uses the cgroupfs driver, so the path is
// kubepods[/<qos>]/pod<uid>/<container id>.
func cgroupDir(t *testing.T, p *corev1.Pod, container, controller string) string {
	t.Helper()
	st := containerStatus(p, container)
	if st == nil || st.ContainerID == "" {
		t.Fatalf("container %s of %s/%s has no container ID", container, p.Namespace, p.Name)
	}
	id := st.ContainerID[strings.Index(st.ContainerID, "://")+3:]
	for _, pattern := range []string{
		filepath.Join(cgroupRoot, controller, "kubepods", "pod"+string(p.UID), id),
		filepath.Join(cgroupRoot, controller, "kubepods", "*", "pod"+string(p.UID), id),
	} {
		if m, _ := filepath.Glob(pattern); len(m) == 1 {
			return m[0]
		}
	}
	t.Fatalf("no %s cgroup for container %s (%s) of pod %s", controller, container, id, p.UID)
	return ""
}

// readCgroup reads one integer cgroup file of the container.
func readCgroup(t *testing.T, p *corev1.Pod, container, controller, file string) int64 {
	t.Helper()
	return readInt(t, filepath.Join(cgroupDir(t, p, container, controller), file))
}

// readInt reads a file holding one integer, as cgroup files do.
func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("parse %s (%q): %v", path, b, err)
	}
	return v
}

// waitCgroup polls a cgroup file until it holds want: the kubelet reports
// status after writing cgroups, but the test should not depend on ordering.
func waitCgroup(t *testing.T, p *corev1.Pod, container, controller, file string, want int64) {
	t.Helper()
	waitCgroupFollowsSpec(t, p, container, controller, file, func(*corev1.Pod) int64 { return want })
}

// waitCgroupFollowsSpec polls until the container's cgroup file holds
// want(pod) of the pod as it is at that moment, and returns that pod. A
// manager still running may resize again between the test's read of the pod
// and the cgroup's (a second raise during a ramp), so the value to find is
// read from the spec each time: what is proven is that the kubelet wrote the
// spec into the cgroup, whichever resize was the last.
func waitCgroupFollowsSpec(t *testing.T, p *corev1.Pod, container, controller, file string, want func(*corev1.Pod) int64) *corev1.Pod {
	t.Helper()
	var got, wanted int64
	var fresh *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if fresh, err = clientset.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		wanted = want(fresh)
		got = readCgroup(t, fresh, container, controller, file)
		if got != wanted {
			return false, nil
		}
		// The same spec must still be there once the file was read.
		again, err := clientset.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return want(again) == wanted, nil
	})
	if err != nil {
		t.Fatalf("%s/%s of %s/%s: got %d, want %d", controller, file, p.Name, container, got, wanted)
	}
	return fresh
}

// waitFile polls an integer file until it holds want.
func waitFile(t *testing.T, path string, want int64) {
	t.Helper()
	var got int64
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = readInt(t, path)
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("%s: got %d, want %d", path, got, want)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// sharedCPU is the node's CPU, in millicores, that the shared tests of this
// process may request at once: the node's 2 cores less what the other
// packages' shared tests and the cluster's own pods may hold.
const sharedCPU = 1800

// nodeCPU hands the shared tests the node's CPU. Side by side, tests whose
// pods together asked for more than the node has would see their pods wait
// Pending, and a raise that a test waits for cut to the room another test
// left: each takes, before it creates anything, the most CPU its pods will
// request (tailor's raises included), and gives it back when it ends.
var nodeCPU = semaphore.NewWeighted(sharedCPU)

// reserveCPU takes millis of the node's CPU for t until it ends (all of it
// for a test that needs more). A quiet test runs alone and reserves
// nothing.
func reserveCPU(t *testing.T, millis int64) {
	t.Helper()
	millis = min(millis, sharedCPU)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := nodeCPU.Acquire(ctx, millis); err != nil {
		t.Fatalf("waiting for %dm of the node's CPU: %v", millis, err)
	}
	t.Cleanup(func() { nodeCPU.Release(millis) })
}

// waitWorkingSet waits until the kubelet's /metrics/resource, the page the
// manager's default source reads, reports at least want bytes of working set
// for the container: the kubelet's figures lag the cgroup by its
// housekeeping period, so a pod can be running long before they show what
// it holds.
func waitWorkingSet(t *testing.T, p *corev1.Pod, container string, want int64) {
	t.Helper()
	var seen float64
	var unread error
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		raw, err := clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", nodeName, "proxy", "metrics", "resource").DoRaw(ctx)
		if err != nil {
			unread = err
			return false, nil //nolint:nilerr // tried again: the kubelet may be busy
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
		if err != nil {
			return false, fmt.Errorf("the kubelet's /metrics/resource: %w", err)
		}
		for _, m := range families["container_memory_working_set_bytes"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == p.Namespace && labels["pod"] == p.Name && labels["container"] == container {
				seen = m.GetGauge().GetValue() + m.GetUntyped().GetValue()
			}
		}
		return seen >= float64(want), nil
	})
	if err != nil {
		t.Fatalf("the kubelet reports %.0f bytes of working set for %s/%s %s, want %d: %v (last read: %v)", seen, p.Namespace, p.Name, container, want, err, unread)
	}
}
