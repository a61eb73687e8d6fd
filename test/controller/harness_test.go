//go:build controller

package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/test/builder"
)

// syncPeriod is the manager's default --sync-period.
const syncPeriod = 10 * time.Second

// env is one test's world: its namespace, a node, a fake clock, a scripted
// metrics source, the events the controller sent, a simulated kubelet and
// the controller itself.
type env struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	node    string
	clock   *clocktesting.FakeClock
	source  *scriptedSource
	events  *eventLog
	kubelet *kubelet
	ctrl    reconcile.Reconciler
	opts    controllerOptions
	// writer creates the test's pods, workloads and policies: the tests'
	// admin, or a namespace's own user when a test acts as one (the red
	// team). What a node or a controller writes (statuses, ReplicaSets)
	// is still the admin's.
	writer client.Client
	// start is the fake clock's first reading.
	start time.Time
}

// newEnv makes a namespace and a node (8 cores, 32Gi allocatable) for t,
// and a controller with opts.
func newEnv(t *testing.T, opts controllerOptions) *env {
	t.Helper()
	e := &env{
		t:   t,
		ctx: log.IntoContext(context.Background(), testr.NewWithOptions(t, testr.Options{Verbosity: 0})),
		// Whole seconds: the recommender keeps Unix seconds.
		clock:   clocktesting.NewFakeClock(time.Now().Truncate(time.Second)),
		events:  &eventLog{},
		kubelet: newKubelet(apiClient),
		opts:    opts,
		writer:  apiClient,
	}
	e.start = e.clock.Now()
	e.source = newScriptedSource(e.clock)
	suffix := rand.String(5)
	e.ns = "ctl-" + suffix
	if err := apiClient.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	e.node = e.addNode("node-"+suffix, "8", "32Gi")
	e.ctrl = newController(t, e.controllerDeps(), opts)
	return e
}

// addNode creates a Node with allocatable cpu and memory (written through
// the status subresource, as a kubelet does) and deletes it after the test.
func (e *env) addNode(name, cpu, memory string) string {
	e.t.Helper()
	return e.addNodeFrom(builder.Node(name).Allocatable(cpu, memory).Ready(corev1.ConditionTrue).DeclaredFeatures(podLevelResize))
}

// podLevelResize is the feature a node declares when its kubelet resizes
// pod-level resources in place: the simulated kubelet does.
const podLevelResize = "InPlacePodLevelResourcesVerticalScaling"

// addNodeFrom creates the node w describes, status included.
func (e *env) addNodeFrom(w *builder.NodeWrapper) string {
	e.t.Helper()
	n := w.Obj()
	name := n.Name
	st := n.Status
	if err := apiClient.Create(e.ctx, n); err != nil {
		e.t.Fatalf("create node %s: %v", name, err)
	}
	n.Status = st
	if err := apiClient.Status().Update(e.ctx, n); err != nil {
		e.t.Fatalf("set status of node %s: %v", name, err)
	}
	// The apiserver taints a new node not-ready until the node lifecycle
	// controller, which does not run here, sees it Ready.
	if len(n.Spec.Taints) != len(w.Spec.Taints) {
		n.Spec.Taints = w.Spec.Taints
		if err := apiClient.Update(e.ctx, n); err != nil {
			e.t.Fatalf("untaint node %s: %v", name, err)
		}
	}
	e.t.Cleanup(func() {
		_ = apiClient.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return name
}

// controllerDeps are what a controller shares with the test: restarting the
// manager keeps the clock, metrics and apiserver, not the controller.
func (e *env) controllerDeps() deps {
	return deps{clock: e.clock, source: e.source, events: e.events}
}

// restart replaces the controller with a new one, as a manager restart does.
func (e *env) restart() {
	e.ctrl = newController(e.t, e.controllerDeps(), e.opts)
}

// throttledWeb creates pod (400m/800m of CPU) of app, on node unless
// node is "" (the test's), throttled 80% of its periods at 200Mi of memory,
// and a policy of app with the defaults: a manager that syncs it raises its
// CPU as far as the node's room allows. The scope and shard tests set one
// beside another's pods.
func (e *env) throttledWeb(app, pod, node string) {
	e.t.Helper()
	w := builder.Pod(pod).Container(builder.Container("app").Requests("400m", "256Mi").Limits("800m", "512Mi"))
	if node != "" {
		w.Node(node)
	}
	e.pod(app, w)
	e.source.SetThrottled(e.ns, pod, "app", 0.8, 200*mi, 0.9)
	e.policy(app, nil)
}

// pod creates a Running pod labelled app=app from w, on the test's node
// unless w names another, with
// container statuses (running, ready, started, resources = spec) written
// through the status subresource, and returns it as stored.
func (e *env) pod(app string, w *builder.PodWrapper) *corev1.Pod {
	e.t.Helper()
	if w.Spec.NodeName == "" {
		w.Node(e.node)
	}
	p := w.Namespace(e.ns).Label("app", app).Running().Obj()
	st := p.Status
	if err := e.writer.Create(e.ctx, p); err != nil {
		e.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	p.Status = st
	yes := true
	started := metav1.NewTime(e.clock.Now())
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.Ready, cs.Started = true, &yes
		cs.Image, cs.ImageID = builder.DefaultImage, builder.DefaultImage
		cs.ContainerID = "containerd://" + string(p.UID) + "-" + cs.Name
		cs.State.Running.StartedAt = started
	}
	p.Status.QOSClass = qosOf(p)
	p.Status.ObservedGeneration = p.Generation
	p.Status.StartTime = &started
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: started, ObservedGeneration: p.Generation})
	}
	if err := apiClient.Status().Update(e.ctx, p); err != nil {
		e.t.Fatalf("set status of pod %s: %v", p.Name, err)
	}
	return p
}

// qosOf keeps the class the apiserver computed on create.
func qosOf(p *corev1.Pod) corev1.PodQOSClass {
	got := &corev1.Pod{}
	if err := apiClient.Get(context.Background(), client.ObjectKeyFromObject(p), got); err == nil {
		return got.Status.QOSClass
	}
	return p.Status.QOSClass
}

// getPod reads a pod from the apiserver.
func (e *env) getPod(name string) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, p); err != nil {
		e.t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// policy creates a TailorPolicy selecting app=name; mutate shapes its spec.
func (e *env) policy(name string, mutate func(*v1alpha1.TailorPolicySpec)) *v1alpha1.TailorPolicy {
	e.t.Helper()
	p := &v1alpha1.TailorPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: v1alpha1.TailorPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	if err := e.writer.Create(e.ctx, p); err != nil {
		e.t.Fatalf("create policy %s: %v", name, err)
	}
	return p
}

// getPolicy reads a policy from the apiserver.
func (e *env) getPolicy(name string) *v1alpha1.TailorPolicy {
	e.t.Helper()
	p := &v1alpha1.TailorPolicy{}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, p); err != nil {
		e.t.Fatalf("get policy %s: %v", name, err)
	}
	return p
}

// reconcile runs one Reconcile of policy name and fails the test on error.
func (e *env) reconcile(name string) reconcile.Result {
	e.t.Helper()
	res, err := e.tryReconcile(name)
	if err != nil {
		e.t.Fatalf("reconcile %s at +%s: %v", name, e.elapsed(), err)
	}
	return res
}

func (e *env) tryReconcile(name string) (reconcile.Result, error) {
	return e.ctrl.Reconcile(e.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.ns, Name: name}})
}

// elapsed is how far the fake clock has moved since the test began.
func (e *env) elapsed() time.Duration { return e.clock.Since(e.start) }

// sync is one sync period of the world: the clock moves on, the controller
// reconciles policy name, and the kubelet answers what it sent.
func (e *env) sync(name string) {
	e.t.Helper()
	e.clock.Step(syncPeriod)
	e.reconcile(name)
	e.kubelet.Sync(e.t, e.ns)
}

// syncs runs n syncs.
func (e *env) syncs(name string, n int) {
	e.t.Helper()
	for range n {
		e.sync(name)
	}
}

// requestOf and limitOf are container c's request and limit of r, as
// quantity strings ("unset" when there is none).
func requestOf(p *corev1.Pod, c string, r corev1.ResourceName) string {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == c {
			q, ok := ctr.Resources.Requests[r]
			if !ok {
				return "unset"
			}
			return q.String()
		}
	}
	return "no container " + c
}

func limitOf(p *corev1.Pod, c string, r corev1.ResourceName) string {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == c {
			q, ok := ctr.Resources.Limits[r]
			if !ok {
				return "unset"
			}
			return q.String()
		}
	}
	return "no container " + c
}

// condition returns the policy's condition of type typ, or nil.
func condition(p *v1alpha1.TailorPolicy, typ string) *metav1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// webCondition is policy web's condition of type typ; the test fails when
// the policy has none.
func (e *env) webCondition(typ string) metav1.Condition {
	e.t.Helper()
	c := condition(e.getPolicy("web"), typ)
	if c == nil {
		e.t.Fatalf("policy web has no %s condition: %+v", typ, e.getPolicy("web").Status.Conditions)
		return metav1.Condition{}
	}
	return *c
}

// eventLog is the controller's EventRecorder: it keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	object, reason, note string
}

func (l *eventLog) Eventf(regarding runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	name := "?"
	if o, ok := regarding.(client.Object); ok {
		name = o.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event{object: name, reason: reason, note: fmt.Sprintf(note, args...)})
}

// count is how many events with reason were sent about object ("" for any).
func (l *eventLog) count(object, reason string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.reason == reason && (object == "" || ev.object == object) {
			n++
		}
	}
	return n
}

// all is every event sent so far.
func (l *eventLog) all() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event(nil), l.events...)
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ev := range l.events {
		fmt.Fprintf(&b, "\n  %s %s: %s", ev.object, ev.reason, ev.note)
	}
	return b.String()
}

// resizesTotal reads tailor_resizes_total{namespace, policy, result} from
// the registry the manager serves.
func resizesTotal(t *testing.T, ns, policy, result string) float64 {
	t.Helper()
	return metricValue(t, "tailor_resizes_total", map[string]string{"namespace": ns, "policy": policy, "result": result})
}

// metricValue is the value of the counter or gauge name whose labels
// include want, from the controller's registry; 0 when there is none.
func metricValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// oomKill writes to a pod's status what the kubelet reports after the
// kernel killed its first container for memory, now, and restarted it.
func (e *env) oomKill(name string) {
	e.t.Helper()
	p := e.getPod(name)
	killed := metav1.NewTime(e.clock.Now())
	cs := &p.Status.ContainerStatuses[0]
	cs.RestartCount++
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 137, Reason: "OOMKilled", StartedAt: cs.State.Running.StartedAt, FinishedAt: killed,
	}}
	cs.State.Running.StartedAt = killed
	if err := apiClient.Status().Update(e.ctx, p); err != nil {
		e.t.Fatalf("writing the OOM kill of %s: %v", name, err)
	}
}

// onlyResource makes a policy size one resource of container app.
func onlyResource(r corev1.ResourceName) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "app", ControlledResources: []corev1.ResourceName{r},
		}}}
	}
}

// deletePod deletes a pod at once, as a kubelet confirming the kill does.
func (e *env) deletePod(name string) {
	e.t.Helper()
	zero := int64(0)
	err := apiClient.Delete(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}, &client.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("delete pod %s: %v", name, err)
	}
}

// syncCounter is an Observer that counts each policy's completed syncs.
// The controller tells its Observer after a sync has acted and before it
// writes status, so a count reached means the resizes of that many syncs
// are already on the pods: a test that something did not happen waits for
// syncs that could have done it, not for a stretch of time a slow machine
// may not fill.
type syncCounter struct {
	mu    sync.Mutex
	syncs map[types.NamespacedName]int
}

var _ observation.Observer = (*syncCounter)(nil)

func newSyncCounter() *syncCounter {
	return &syncCounter{syncs: map[types.NamespacedName]int{}}
}

func (c *syncCounter) Observe(key types.NamespacedName, _ observation.Observation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncs[key]++
}

func (c *syncCounter) Resized(types.NamespacedName, observation.ResizeMark) {}
func (c *syncCounter) Forget(types.NamespacedName)                          {}

// of is how many syncs of policy name in the test's namespace completed.
func (c *syncCounter) of(e *env, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncs[types.NamespacedName{Namespace: e.ns, Name: name}]
}

// waitSyncs waits until policy name has completed n syncs, for at most
// timeout (a deadline for the controller to work at all, as the positive
// tests use, not the window of the assertion that follows).
func (c *syncCounter) waitSyncs(e *env, name string, n int, timeout time.Duration) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return c.of(e, name) >= n, nil
	})
	if err != nil {
		e.t.Fatalf("policy %s completed %d syncs within %s, want %d", name, c.of(e, name), timeout, n)
	}
}
