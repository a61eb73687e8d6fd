package manager

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/internal/shard"
	"github.com/tailorhq/tailor/test/builder"
)

// dress gives a generated pod what a real one carries beside its
// resources: what a Deployment's template adds (image, env, probes,
// volumes, annotations) and the status the kubelet posts (running or
// restarted containers, their resources, conditions, IPs). The draw
// depends on seed; the generated resources are left as they are.
func dress(p *corev1.Pod, seed uint64) {
	started := metav1.NewTime(time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC))
	p.UID = "uid-" + "p"
	p.Generation = 1 + int64(seed%3)
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "abc"}
	p.Annotations = map[string]string{"prometheus.io/scrape": "true", lastApplied: "{}"}
	if seed%7 == 0 {
		p.Annotations[mirrorPod] = "hash"
	}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr(true)}}
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if seed%5 == 0 {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	if seed%11 == 0 {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			c := &list[i]
			c.Image = "registry.example/app:1.2.3"
			c.Env = []corev1.EnvVar{{Name: "JAVA_OPTS", Value: "-Xmx1g"}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.0.0.7"
	p.Status.QOSClass = qos.ComputePodQOS(p)
	p.Status.ObservedGeneration = p.Generation
	if seed%4 == 0 {
		p.Status.ObservedGeneration = p.Generation - 1
	}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}
	switch seed % 6 {
	case 1:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, ObservedGeneration: p.Generation})
	case 2:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: p.Generation})
	}
	status := func(c corev1.Container, i int) corev1.ContainerStatus {
		s := corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "sha256:0123", ContainerID: "containerd://0123",
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:              true,
			AllocatedResources: c.Resources.Requests,
			Resources:          c.Resources.DeepCopy(),
		}
		if (seed+uint64(i))%3 == 0 {
			s.RestartCount = 2
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, Message: "killed", FinishedAt: started}
		}
		if (seed+uint64(i))%9 == 0 {
			// A kubelet without in-place resize reports no resources.
			s.Resources = nil
		}
		return s
	}
	for i, c := range p.Spec.InitContainers {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, status(c, i))
	}
	for i, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, status(c, i))
	}
	if p.Spec.Resources != nil {
		p.Status.Resources = p.Spec.Resources.DeepCopy()
	}
}

func ptr[T any](v T) *T { return &v }

func with(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod {
	f(p)
	return p
}

// TestSlimPodDecidesAlike: a sync decides the same over the cache's slim
// pods as over whole ones, on thousands of generated policies and pods of
// every shape (sidecars, init containers, pod-level resources, every
// resize policy), dressed as real pods. A field the decision reads and
// slimPod drops shows up as a different decision.
func TestSlimPodDecidesAlike(t *testing.T) {
	const cases = 3000
	resizes, held := 0, 0
	// One table for every case, small enough to turn over many times.
	lists := newListTable(64)
	for seed := range uint64(cases) {
		whole := autoscaletest.Case(seed)
		slim := whole
		slim.Pods = append([]fleet.PodInput(nil), whole.Pods...)
		slim.Nodes = map[string]*resize.NodeState{}
		for name, n := range whole.Nodes {
			c := *n
			c.Pods = nil
			slim.Nodes[name] = &c
		}
		bySlim := map[*corev1.Pod]*corev1.Pod{}
		for i := range whole.Pods {
			dress(whole.Pods[i].Pod, seed+uint64(i))
			s := slimPod(whole.Pods[i].Pod.DeepCopy(), lists)
			bySlim[whole.Pods[i].Pod] = s
			// The controller's own reading of a pod: is a resize in flight?
			if w, g := actuator.Observe(whole.Pods[i].Pod), actuator.Observe(s); !cmp.Equal(w, g) {
				t.Fatalf("seed %d: pod %s observed otherwise (-whole,+slim):\n%s", seed, s.Name, cmp.Diff(w, g))
			}
			slim.Pods[i].Pod = s
		}
		for name, n := range whole.Nodes {
			for _, p := range n.Pods {
				slim.Nodes[name].Pods = append(slim.Nodes[name].Pods, bySlim[p])
			}
		}
		want := decidesAlike(t, seed, "slim pods", whole, slim)
		resizes += len(want.Resizes)
		held += len(want.Held)
	}
	// The cases must exercise both outcomes, or the comparison shows little.
	if resizes < cases/4 || held < cases/20 {
		t.Fatalf("%d cases gave %d resizes and %d holds: too few to compare", cases, resizes, held)
	}
	t.Logf("%d cases: %d resizes, %d held, decided alike", cases, resizes, held)
}

// TestForeignPodDecidesAlike: a manager of one shard keeps the pods of
// other shards' namespaces as foreignPod. A sync decides the same when the
// neighbours on the node (pods of every shape, drawn like the policy's,
// some with a resize under way) are whole as when they are foreign: the
// room they leave is counted alike. The neighbours crowd the node, so
// that many cases turn on that room.
func TestForeignPodDecidesAlike(t *testing.T) {
	const cases = 3000
	lists := newListTable(64)
	resizes, held := 0, 0
	for seed := range uint64(cases) {
		whole := autoscaletest.Case(seed)
		neighbours := autoscaletest.Case(seed + 1<<32).Nodes[autoscaletest.NodeName].Pods
		n := whole.Nodes[autoscaletest.NodeName]
		foreign := *n
		foreign.Pods = append([]*corev1.Pod(nil), n.Pods...)
		for i, p := range neighbours {
			dress(p, seed+uint64(i))
			p.Name, p.Namespace, p.UID = fmt.Sprintf("neighbour-%d", i), "other-team", types.UID(fmt.Sprintf("neighbour-%d", i))
			if (seed+uint64(i))%3 == 0 {
				lowerInFlight(p)
			}
			n.Pods = append(n.Pods, p)
			foreign.Pods = append(foreign.Pods, foreignPod(p.DeepCopy(), lists))
		}
		other := whole
		other.Nodes = map[string]*resize.NodeState{autoscaletest.NodeName: &foreign}
		want := decidesAlike(t, seed, "foreign neighbours", whole, other)
		resizes += len(want.Resizes)
		held += len(want.Held)
	}
	if resizes < cases/10 || held < cases/10 {
		t.Fatalf("%d cases gave %d resizes and %d holds: too few to compare", cases, resizes, held)
	}
	t.Logf("%d cases: %d resizes, %d held, decided alike", cases, resizes, held)
}

// decidesAlike decides whole and cut, the same case with pods cut down as
// the cache keeps them (what says how), fails the test unless every resize,
// hold and decision is the same, and returns the decision over whole.
func decidesAlike(t *testing.T, seed uint64, what string, whole, cut fleet.PolicyInput) fleet.PolicyDecision {
	t.Helper()
	want, err := fleet.DecidePolicy(whole)
	if err != nil {
		t.Fatalf("seed %d: whole pods: %v", seed, err)
	}
	got, err := fleet.DecidePolicy(cut)
	if err != nil {
		t.Fatalf("seed %d: %s: %v", seed, what, err)
	}
	if diff := cmp.Diff(summary(want), summary(got)); diff != "" {
		t.Fatalf("seed %d: %s decide otherwise (-whole,+%s):\n%s", seed, what, what, diff)
	}
	return want
}

// lowerInFlight halves p's container requests in its spec, as a lowering
// the kubelet has not applied yet: its status still reports the old ones,
// and the node counts those.
func lowerInFlight(p *corev1.Pod) {
	for i := range p.Spec.Containers {
		for name, q := range p.Spec.Containers[i].Resources.Requests {
			half := resource.NewMilliQuantity(q.MilliValue()/2, q.Format)
			p.Spec.Containers[i].Resources.Requests[name] = *half
		}
	}
}

// summary is a PolicyDecision without its pod pointers: what was sent
// (the patch) and held, and why.
func summary(d fleet.PolicyDecision) []string {
	var out []string
	for _, a := range d.Resizes {
		out = append(out, fmt.Sprintf("resize %s: %s", a.Pod.Name, a.Plan.Patch))
	}
	for _, h := range d.Held {
		out = append(out, fmt.Sprintf("held %s: %s %s %s", h.Pod.Name, h.Reason, h.Rule, h.Message))
	}
	for name, dec := range d.Decisions {
		// JSON writes quantities by value, not by how they were parsed.
		b, err := json.Marshal(dec)
		if err != nil {
			panic(err)
		}
		out = append(out, fmt.Sprintf("decided %s: %s", name, b))
	}
	sort.Strings(out)
	return append(out, fmt.Sprintf("retry after %s", d.RetryAfter))
}

// TestSlimPodPlacesAlike: what recreation reads of a pod (its controller,
// priority, preemption policy, tolerations, node selector and required
// node affinity, overhead) survives slimming.
func TestSlimPodPlacesAlike(t *testing.T) {
	node := func(name string) *builder.NodeWrapper {
		return builder.Node(name).Allocatable("2", "4Gi").Ready(corev1.ConditionTrue)
	}
	other := builder.Pod("other").UID("o").Node("a").Priority(50).Container(builder.Container("c").Requests("1", "1Gi")).Obj()
	nodes := []placement.NodePods{
		{Node: node("a").Label("pool", "big").Obj(), Pods: []*corev1.Pod{other}},
		{Node: node("tainted").Label("pool", "big").Taint("gpu", "yes", corev1.TaintEffectNoSchedule).Obj()},
		{Node: node("zone-b").Label("pool", "big").Label("zone", "b").Obj()},
		{Node: node("small").Obj()},
	}
	bigger := []v1alpha1.RecreatedContainer{{Name: "app", Requests: builder.List("1500m", "256Mi")}}
	base := func() *builder.PodWrapper {
		return builder.Pod("me").UID("me").Node("a").Owner("ReplicaSet", "web-abc", "rs").Container(builder.Container("app").Requests("500m", "256Mi"))
	}
	zoneB := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}},
	}}}
	pods := map[string]*corev1.Pod{
		"plain":           base().Obj(),
		"may preempt":     base().Priority(100).Obj(),
		"may not preempt": base().Priority(100).PreemptionPolicy(corev1.PreemptNever).Obj(),
		"selects a pool":  base().NodeSelector("pool", "big").Obj(),
		"tolerates":       base().Toleration("gpu").Obj(),
		"requires zone b": with(base().Obj(), func(p *corev1.Pod) { p.Spec.Affinity = zoneB }),
		"heavy overhead":  with(base().Obj(), func(p *corev1.Pod) { p.Spec.Overhead = builder.List("1", "0") }),
		"no controller":   builder.Pod("me").UID("me").Node("a").Container(builder.Container("app").Requests("500m", "256Mi")).Obj(),
		"of a daemon set": base().Owner("DaemonSet", "agent", "ds").Obj(),
	}
	for name, p := range pods {
		t.Run(name, func(t *testing.T) {
			dress(p, 1)
			s := slimPod(p.DeepCopy(), newListTable(listTableSize))
			wn, wok := placement.Placeable(p, bigger, nodes)
			gn, gok := placement.Placeable(s, bigger, nodes)
			if wn != gn || wok != gok {
				t.Errorf("placed %q %v whole, %q %v slim", wn, wok, gn, gok)
			}
			// The pod beside it on node a, of another shard's namespace.
			foreign := slices.Clone(nodes)
			foreign[0].Pods = []*corev1.Pod{foreignPod(other.DeepCopy(), newListTable(listTableSize))}
			if fn, fok := placement.Placeable(s, bigger, foreign); fn != gn || fok != gok {
				t.Errorf("placed %q %v beside a whole pod, %q %v beside a foreign one", gn, gok, fn, fok)
			}
			_, werr := placement.Recreatable(p)
			_, gerr := placement.Recreatable(s)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Errorf("recreatable: %v whole, %v slim", werr, gerr)
			}
		})
	}
}

// TestSlimPodDropsWhatTailorDoesNotRead: the slim pod is much smaller than
// a real one, and keeps tailor's resize managedFields entry (with its field
// set only because the pod was boosted at its start, see
// TestSlimPodKeepsWhatABoostOwns) and nothing else of them.
func TestSlimPodDropsWhatTailorDoesNotRead(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	fields := metav1.NewFieldsV1(`{"f:spec":{}}`)
	p := builder.Pod("web").Node("a").Owner("ReplicaSet", "web-abc", "rs").
		Container(builder.Container("app").Requests("500m", "256Mi")).
		Container(builder.Container("proxy").Requests("100m", "64Mi")).Obj()
	dress(p, 3)
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsV1: fields},
		{Manager: "tailor", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at, FieldsV1: fields},
	}
	// What ends a startup boost, and what it was: kept. That tailor's
	// admission sized the pod: kept, without its text.
	p.Annotations[v1alpha1.BoostAnnotation] = "app=400m"
	p.Annotations[v1alpha1.AdmittedAnnotation] = "web: app: cpu 100m->400m (startup boost: app=400m)"
	gate := corev1.PodCondition{Type: "example.com/warm", Status: corev1.ConditionTrue, LastTransitionTime: at}
	p.Status.Conditions = append(p.Status.Conditions, gate)
	got, err := trim(p.DeepCopy(), shard.Shard{}, newListTable(listTableSize))
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*corev1.Pod)
	if diff := cmp.Diff(map[string]string{v1alpha1.BoostAnnotation: "app=400m", v1alpha1.AdmittedAnnotation: ""}, s.Annotations); diff != "" {
		t.Errorf("annotations (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(gate, s.Status.Conditions[len(s.Status.Conditions)-1]); diff != "" {
		t.Errorf("readiness gate condition (-want,+got):\n%s", diff)
	}
	s.Annotations, s.Status.Conditions = nil, s.Status.Conditions[:len(s.Status.Conditions)-1]
	want := []metav1.ManagedFieldsEntry{{Manager: "tailor", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at, FieldsV1: fields}}
	if diff := cmp.Diff(want, s.ManagedFields); diff != "" {
		t.Errorf("managedFields (-want,+got):\n%s", diff)
	}
	if s.Annotations != nil || s.Spec.Volumes != nil || s.Spec.Containers[0].Image != "" || s.Spec.Containers[0].Env != nil ||
		s.Status.PodIP != "" || s.Status.ContainerStatuses[0].ImageID != "" || len(s.Status.Conditions) != 1 {
		t.Errorf("slim pod kept what tailor does not read: %+v", s)
	}
	if whole, slim := p.Size(), s.Size(); slim >= whole {
		t.Errorf("slim pod is %d bytes encoded, whole %d", slim, whole)
	}
	if s.Status.ContainerStatuses[1].Resources.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 {
		t.Errorf("container status resources lost: %+v", s.Status.ContainerStatuses[1])
	}

	// A settled container's reported and allocated resources share its
	// spec's lists; one mid-resize keeps its own.
	mapOf := func(l corev1.ResourceList) uintptr { return reflect.ValueOf(l).Pointer() }
	st, spec := s.Status.ContainerStatuses[0], s.Spec.Containers[0].Resources
	if mapOf(st.AllocatedResources) != mapOf(spec.Requests) || mapOf(st.Resources.Requests) != mapOf(spec.Requests) {
		t.Errorf("a settled container's status holds its own copies of the spec's requests")
	}
	p.Spec.Containers[0].Resources.Requests = builder.List("600m", "256Mi")
	s = slimPod(p, newListTable(listTableSize))
	st, spec = s.Status.ContainerStatuses[0], s.Spec.Containers[0].Resources
	if mapOf(st.Resources.Requests) == mapOf(spec.Requests) || st.Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("mid-resize, the reported requests %v were replaced by the spec's %v", st.Resources.Requests, spec.Requests)
	}
}

// TestListTableSharesAndForgets: equal lists are one map; a list no pod
// asked for in a whole generation is forgotten, one asked for is kept.
func TestListTableSharesAndForgets(t *testing.T) {
	mapOf := func(l corev1.ResourceList) uintptr { return reflect.ValueOf(l).Pointer() }
	table := newListTable(2)
	a := table.intern(builder.List("500m", "256Mi"))
	if b := table.intern(builder.List("500m", "256Mi")); mapOf(a) != mapOf(b) {
		t.Errorf("equal lists not shared")
	}
	if c := table.intern(builder.List("500m", "257Mi")); mapOf(a) == mapOf(c) {
		t.Errorf("different lists shared")
	}
	// The generation is full: a third list starts a new one, where a is
	// found again in the old one and carried over.
	table.intern(builder.List("1", "1Gi"))
	if b := table.intern(builder.List("500m", "256Mi")); mapOf(a) != mapOf(b) {
		t.Errorf("a list of the previous generation is not found")
	}
	// Two more turns without asking for 257Mi: it is forgotten.
	c := table.intern(builder.List("500m", "257Mi"))
	for _, cpu := range []string{"2", "3", "4", "5"} {
		table.intern(builder.List(cpu, "1Gi"))
	}
	if d := table.intern(builder.List("500m", "257Mi")); mapOf(c) == mapOf(d) {
		t.Errorf("a list nobody asked for in two generations is still held")
	}
	if n := len(table.cur) + len(table.prev); n > 4 {
		t.Errorf("table holds %d lists, more than two generations of 2", n)
	}
	var nilTable *listTable
	if l := builder.List("1", "1Gi"); mapOf(nilTable.intern(l)) != mapOf(l) {
		t.Errorf("a nil table changed a list")
	}
}

// TestSlimPodKeepsWhatABoostOwns: tailor's resize entries keep their field
// sets on a pod boosted at its start (annotated at admission, or resized
// under the boost's field manager), which say whether its cpu is still
// lent, and lose them on any other pod.
func TestSlimPodKeepsWhatABoostOwns(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	cpu := metav1.NewFieldsV1(`{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:resources":{"f:requests":{"f:cpu":{}}}}}}}`)
	entry := func(manager string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at, FieldsV1: cpu}
	}
	cases := map[string]struct {
		entries []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
	}{
		"not boosted: times only": {
			entries: []metav1.ManagedFieldsEntry{entry(actuator.FieldManager)},
			want:    []metav1.ManagedFieldsEntry{{Manager: actuator.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at}},
		},
		"boosted in place: both entries whole": {
			entries: []metav1.ManagedFieldsEntry{entry(actuator.FieldManager), entry(boost.FieldManager)},
			want:    []metav1.ManagedFieldsEntry{entry(actuator.FieldManager), entry(boost.FieldManager)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := builder.Pod("web").Node("a").Container(builder.Container("app").Requests("500m", "256Mi")).Obj()
			p.ManagedFields = tc.entries
			got, err := trim(p, shard.Shard{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.(*corev1.Pod).ManagedFields); diff != "" {
				t.Errorf("managedFields (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSlimPodKeepsAJVMsHeapOption: of a JVM's command and environment the
// cache keeps what says how far its heap may grow, which the decision
// reads, and nothing of another program's.
func TestSlimPodKeepsAJVMsHeapOption(t *testing.T) {
	p := builder.Pod("p").
		Container(builder.Container("jvm").Command("/bin/sh", "-c", "exec java -Dspring.profiles.active=prod -Xmx2g -jar /app.jar")).
		Container(builder.Container("proxy").Command("/envoy", "--config-path", "/etc/envoy.yaml")).Obj()
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "secret"}, {Name: "JAVA_TOOL_OPTIONS", Value: "-XX:+UseZGC"}}
	s := slimPod(p, newListTable(listTableSize))
	if diff := cmp.Diff([]string{"java", "-Xmx2g"}, s.Spec.Containers[0].Command); diff != "" {
		t.Errorf("the JVM's command (-want,+got):\n%s", diff)
	}
	if s.Spec.Containers[0].Env != nil || s.Spec.Containers[1].Command != nil || s.Spec.Containers[1].Env != nil {
		t.Errorf("kept what the decision does not read: %+v", s.Spec.Containers)
	}
	if diff := cmp.Diff(jvm.HeapOf(&p.Spec.Containers[0]), jvm.HeapOf(&s.Spec.Containers[0])); diff != "" {
		t.Errorf("the heap read from the slim pod (-whole,+slim):\n%s", diff)
	}
}
