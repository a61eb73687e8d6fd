//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// replicas creates n running load generator pods <name>-<i> labelled
// app=<name>, each container sized by c, and returns them.
func replicas(t *testing.T, ns, name string, n int, c func(*builder.ContainerWrapper) *builder.ContainerWrapper) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		p := cluster.LoadgenPod(ns, fmt.Sprintf("%s-%d", name, i), c(cluster.Loadgen()))
		p.Labels = map[string]string{"app": name}
		if _, err := clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	var out []*corev1.Pod
	for i := range n {
		out = append(out, waitPod(t, ns, fmt.Sprintf("%s-%d", name, i), 90*time.Second, "running", func(p *corev1.Pod) bool {
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			for _, cs := range p.Status.ContainerStatuses {
				if !cs.Ready {
					return false
				}
			}
			return true
		}))
	}
	return out
}

// waitPod polls a pod until cond holds, or fails the test after timeout.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the apiserver may be restarting
		}
		got = p
		return cond(p), nil
	})
	if err != nil {
		desc := "never seen"
		if got != nil {
			desc = fmt.Sprintf("generation %d, resources %v, conditions %v", got.Generation, got.Spec.Containers[0].Resources, got.Status.Conditions)
		}
		t.Fatalf("pod %s/%s not %s within %s: %s", ns, name, what, timeout, desc)
	}
	return got
}

// drive sets the load of every pod, e.g. "/memory?size=20Mi".
func drive(t *testing.T, pods []*corev1.Pod, path string) {
	t.Helper()
	for _, p := range pods {
		if err := cluster.Drive(context.Background(), p, path); err != nil {
			t.Fatal(err)
		}
	}
}

// createPolicy creates a TailorPolicy selecting app=<name> in ns.
func createPolicy(t *testing.T, ns, name string, mutate func(*v1alpha1.TailorPolicySpec)) {
	t.Helper()
	p := cluster.Policy(ns, name, mutate)
	if err := apiClient.Create(context.Background(), p); err != nil {
		t.Fatalf("create policy %s: %v", name, err)
	}
}

// editPolicy changes a policy's spec, retrying on conflicts.
func editPolicy(t *testing.T, ns, name string, mutate func(*v1alpha1.TailorPolicySpec)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p := &v1alpha1.TailorPolicy{}
		if err := apiClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, nil //nolint:nilerr
		}
		mutate(&p.Spec)
		return apiClient.Update(ctx, p) == nil, nil
	})
	if err != nil {
		t.Fatalf("edit policy %s: %v", name, err)
	}
}

// getPolicy reads a policy, or fails the test.
func getPolicy(t *testing.T, ns, name string) *v1alpha1.TailorPolicy {
	t.Helper()
	p := &v1alpha1.TailorPolicy{}
	if err := apiClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatalf("get policy %s: %v", name, err)
	}
	return p
}

// policyText is a policy's status as YAML-ish text, for failures.
func policyText(t *testing.T, ns, name string) string {
	t.Helper()
	p := getPolicy(t, ns, name)
	var b strings.Builder
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, ps := range p.Status.Pods {
		fmt.Fprintf(&b, "\n  pod %s: %s %s", ps.PodName, ps.Result, ps.Message)
	}
	return b.String()
}

// waitCondition polls a policy until its condition typ satisfies ok.
func waitCondition(t *testing.T, ns, name, typ string, timeout time.Duration, what string, ok func(*metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p := &v1alpha1.TailorPolicy{}
		if err := apiClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, nil //nolint:nilerr
		}
		c = meta.FindStatusCondition(p.Status.Conditions, typ)
		return c != nil && ok(c), nil
	})
	if err != nil {
		t.Fatalf("policy %s: condition %s never %s within %s; last %+v", name, typ, what, timeout, c)
	}
	return c
}

// waitEvent waits for an event with reason about the object named in ns.
func waitEvent(t *testing.T, ns, object, reason string, timeout time.Duration) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr
		}
		for _, ev := range list.Items {
			if ev.Reason == reason && ev.InvolvedObject.Name == object {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event about %s within %s", reason, object, timeout)
	}
	return found
}

// metav1Condition is a policy's condition.
type metav1Condition = metav1.Condition

// resize is one change of a pod's spec the recorder saw: a new generation.
type resize struct {
	pod        string
	generation int64
	// at is when the recorder's watch brought it; server is when the
	// apiserver took it, by its own clock in whole seconds (the managed
	// fields of tailor's resize), zero when another client made it.
	at, server time.Time
	cpu, mem   string // the first container's requests after it
}

// recorder watches the pods of a namespace and keeps every resize, so a
// test can count them: a duplicate or conflicting resize is one too many.
type recorder struct {
	mu      sync.Mutex
	last    map[string]int64 // generation by pod
	resizes []resize
}

// record starts a recorder of ns's pods until the test ends. Its watch
// resumes across apiserver restarts.
func record(t *testing.T, ns string) *recorder {
	t.Helper()
	r := &recorder{last: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		r.last[p.Name] = p.Generation
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return clientset.CoreV1().Pods(ns).Watch(ctx, o)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			r.see(p)
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return r
}

func (r *recorder) see(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.Generation <= r.last[p.Name] {
		return
	}
	r.last[p.Name] = p.Generation
	c := p.Spec.Containers[0].Resources.Requests
	rs := resize{pod: p.Name, generation: p.Generation, at: time.Now(), cpu: c.Cpu().String(), mem: c.Memory().String()}
	for _, mf := range p.ManagedFields {
		if mf.Manager == actuator.FieldManager && mf.Subresource == "resize" && mf.Time != nil {
			rs.server = mf.Time.Time
		}
	}
	r.resizes = append(r.resizes, rs)
}

// since returns the resizes seen after t.
func (r *recorder) since(t time.Time) []resize {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []resize
	for _, rs := range r.resizes {
		if rs.at.After(t) {
			out = append(out, rs)
		}
	}
	return out
}

// waitGeneration waits up to timeout until the recorder has seen pod at
// generation gen or later.
func (r *recorder) waitGeneration(pod string, gen int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		seen := r.last[pod]
		r.mu.Unlock()
		if seen >= gen {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFirst waits up to timeout for the first resize after t.
func (r *recorder) waitFirst(after time.Time, timeout time.Duration) (resize, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if rs := r.since(after); len(rs) > 0 {
			return rs[0], true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return resize{}, false
}

// tooClose is every pair of consecutive resizes of a pod less than interval
// apart by the apiserver's clock, as text. Its times are whole seconds, so
// a pair interval apart may read a second less, never more: a pair less
// than interval-1s apart broke it. (When a watch event arrived says
// nothing: a slow watch can bring two events closer than they were made.)
func (r *recorder) tooClose(interval time.Duration) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	byPod := map[string][]resize{}
	for _, rs := range r.resizes {
		byPod[rs.pod] = append(byPod[rs.pod], rs)
	}
	var out []string
	for pod, list := range byPod {
		for i := 1; i < len(list); i++ {
			if list[i].server.IsZero() || list[i-1].server.IsZero() {
				out = append(out, fmt.Sprintf("%s: generation %d -> %d made by another client than tailor", pod, list[i-1].generation, list[i].generation))
				continue
			}
			if gap := list[i].server.Sub(list[i-1].server); gap < interval-time.Second {
				out = append(out, fmt.Sprintf("%s: generation %d -> %d %s apart", pod, list[i-1].generation, list[i].generation, gap.Round(100*time.Millisecond)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, rs := range r.resizes {
		fmt.Fprintf(&b, "\n  %s (apiserver %s) %s generation %d: cpu %s memory %s", rs.at.Format("15:04:05.000"), rs.server.Format(time.TimeOnly), rs.pod, rs.generation, rs.cpu, rs.mem)
	}
	return b.String()
}

// restarts sums the restart counts of the containers of the pods in ns.
func restarts(t *testing.T, ns string) int32 {
	t.Helper()
	list, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, p := range list.Items {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n
}
