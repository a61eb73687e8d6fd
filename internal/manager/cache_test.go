package manager

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/shard"
	"github.com/tailorhq/tailor/test/builder"
)

// Pods are covered by slim_test.go; this is every other object.
func TestTrimKeepsOnlyWhatTailorReads(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	fields := metav1.NewFieldsV1(`{"f:spec":{}}`)
	managed := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsV1: fields},
		{Manager: "tailor", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at, FieldsV1: fields},
	}
	policy := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: "web", ManagedFields: managed,
		Annotations: map[string]string{lastApplied: `{"big":"copy"}`, "team": "a"},
	}}
	if _, err := trim(policy, shard.Shard{}, nil); err != nil {
		t.Fatal(err)
	}
	if policy.ManagedFields != nil {
		t.Errorf("policy managedFields kept: %v", policy.ManagedFields)
	}
	if diff := cmp.Diff(map[string]string{"team": "a"}, policy.Annotations); diff != "" {
		t.Errorf("policy annotations (-want,+got):\n%s", diff)
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: managed, Labels: map[string]string{"pool": "big"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi")},
			DeclaredFeatures: []string{"InPlacePodVerticalScaling"},
			Images:           []corev1.ContainerImage{{Names: []string{"registry.example/app@sha256:0123", "registry.example/app:1.2.3"}, SizeBytes: 1 << 30}},
			VolumesInUse:     []corev1.UniqueVolumeName{"kubernetes.io/csi/x"},
		},
	}
	want := node.DeepCopy()
	want.ManagedFields, want.Status.Images, want.Status.VolumesInUse = nil, nil, nil
	if _, err := trim(node, shard.Shard{}, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, node); diff != "" {
		t.Errorf("node (-want,+got):\n%s", diff)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: pod}
	if got, err := trim(tombstone, shard.Shard{}, nil); err != nil || got != any(tombstone) {
		t.Errorf("a tombstone is changed: %v, %v", got, err)
	}
}

// A manager of one shard keeps its own namespaces' pods slim and others'
// as foreignPod (their requests, node, priority and phase); it keeps
// another shard's checkpoints without the state they hold.
func TestTrimByShard(t *testing.T) {
	own, other := "team-a", "team-b"
	for shard.Of(other, 2) == shard.Of(own, 2) {
		other += "b"
	}
	sh := shard.Shard{Index: shard.Of(own, 2), Count: 2}
	pod := func(ns string) *corev1.Pod {
		return builder.Pod("web-0").Namespace(ns).UID("u").Node("n1").Priority(7).Label("app", "web").
			Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")).
			Container(builder.Container("log").Requests("100m", "64Mi")).Running().Obj()
	}
	got, err := trim(pod(own), sh, newListTable(listTableSize))
	if err != nil {
		t.Fatal(err)
	}
	if p := got.(*corev1.Pod); len(p.Spec.Containers) != 2 || p.Labels["app"] != "web" {
		t.Errorf("own namespace's pod not kept slim: %+v", p.Spec.Containers)
	}
	got, err = trim(pod(other), sh, newListTable(listTableSize))
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: other, UID: "u"},
		Spec: corev1.PodSpec{NodeName: "n1", Priority: ptr(int32(7)), Containers: []corev1.Container{{
			Name: foreignContainer, Resources: corev1.ResourceRequirements{Requests: builder.List("600m", "320Mi")},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("other shard's pod (-want,+got):\n%s", diff)
	}

	cp := func(ns string) *v1alpha1.TailorCheckpoint {
		return &v1alpha1.TailorCheckpoint{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: v1alpha1.TailorCheckpointSpec{PolicyName: "web", PolicyUID: "p"}}
	}
	if got, _ := trim(cp(own), sh, nil); got.(*v1alpha1.TailorCheckpoint).Spec.PolicyName != "web" {
		t.Errorf("own checkpoint lost its spec")
	}
	if got, _ := trim(cp(other), sh, nil); got.(*v1alpha1.TailorCheckpoint).Spec.PolicyName != "" {
		t.Errorf("other shard's checkpoint kept its spec")
	}
}

// A scoped manager watches every namespaced type in its namespaces only,
// but pods cluster-wide: a node's room counts every pod on it. Nodes are
// cluster-scoped, so no namespace setting applies to them.
func TestCacheOptionsScope(t *testing.T) {
	type watched struct {
		// Default are the namespaces every namespaced type is watched
		// in (none: all of them).
		Default []string
		// ByObject are the types set apart, with their namespaces.
		ByObject map[string][]string
	}
	cases := map[string]struct {
		sh   shard.Shard
		want watched
	}{
		"all":     {sh: shard.Shard{}, want: watched{}},
		"sharded": {sh: shard.Shard{Index: 1, Count: 2}, want: watched{}},
		"scoped": {sh: shard.Shard{Namespaces: []string{"team-b", "team-a"}}, want: watched{
			Default:  []string{"team-a", "team-b"},
			ByObject: map[string][]string{"*v1.Pod": {crcache.AllNamespaces}},
		}},
		"scoped and sharded": {sh: shard.Shard{Index: 0, Count: 2, Namespaces: []string{"team-a"}}, want: watched{
			Default:  []string{"team-a"},
			ByObject: map[string][]string{"*v1.Pod": {crcache.AllNamespaces}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := CacheOptions(tc.sh)
			if o.DefaultTransform == nil {
				t.Error("no transform: the cache keeps objects whole")
			}
			got := watched{Default: slices.Sorted(maps.Keys(o.DefaultNamespaces))}
			for obj, by := range o.ByObject {
				if got.ByObject == nil {
					got.ByObject = map[string][]string{}
				}
				got.ByObject[fmt.Sprintf("%T", obj)] = slices.Sorted(maps.Keys(by.Namespaces))
				if by.Transform != nil {
					t.Errorf("%T has a transform of its own: it would skip trim", obj)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("watched namespaces (-want,+got):\n%s", diff)
			}
		})
	}
}

// A scoped manager keeps its namespaces' pods slim and every other pod as
// a foreignPod, as a shard keeps another shard's.
func TestTrimByScope(t *testing.T) {
	sh := shard.Shard{Namespaces: []string{"team-a"}}
	cases := map[string]struct {
		namespace      string
		wantContainers []string
	}{
		"in scope":     {namespace: "team-a", wantContainers: []string{"app", "log"}},
		"out of scope": {namespace: "team-b", wantContainers: []string{foreignContainer}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := builder.Pod("web-0").Namespace(tc.namespace).Node("n1").
				Container(builder.Container("app").Requests("500m", "256Mi")).
				Container(builder.Container("log").Requests("100m", "64Mi")).Running().Obj()
			got, err := trim(p, sh, newListTable(listTableSize))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got.(*corev1.Pod).Spec.Containers {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tc.wantContainers, names); diff != "" {
				t.Errorf("containers kept (-want,+got):\n%s", diff)
			}
		})
	}
}

// ReplicaSets are cached by their metadata, cut down to their identity and
// their controller: a pod's chain to its Deployment reads nothing else.
// Another shard's keep no owner.
func TestTrimReplicaSetMetadata(t *testing.T) {
	yes := true
	deployment := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-1", Controller: &yes}
	rs := func(ns string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "web-5d9c", Namespace: ns, UID: "rs-1", ResourceVersion: "7",
				Labels:          map[string]string{"app": "web", "pod-template-hash": "5d9c"},
				Annotations:     map[string]string{"deployment.kubernetes.io/revision": "3"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "c-1"}, deployment},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}},
			},
		}
	}
	own, other := "team-a", "team-b"
	for shard.Of(other, 2) == shard.Of(own, 2) {
		other += "b"
	}
	sh := shard.Shard{Index: shard.Of(own, 2), Count: 2}
	cases := map[string]struct {
		ns        string
		wantOwner []metav1.OwnerReference
	}{
		"its shard's keeps its controller": {ns: own, wantOwner: []metav1.OwnerReference{deployment}},
		"another shard's keeps no owner":   {ns: other},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := trim(rs(tc.ns), sh, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "web-5d9c", Namespace: tc.ns, UID: "rs-1", ResourceVersion: "7", OwnerReferences: tc.wantOwner},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("replicaset (-want,+got):\n%s", diff)
			}
		})
	}
}

// A VerticalPodAutoscaler keeps its spec, not its recommendation.
func TestTrimVerticalPodAutoscaler(t *testing.T) {
	vpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "a", "managedFields": []any{map[string]any{"manager": "vpa"}}},
		"spec":     map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
		"status":   map[string]any{"recommendation": map[string]any{"containerRecommendations": []any{}}},
	}}
	if _, err := trim(vpa, shard.Shard{}, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "a"},
		"spec":     map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
	}
	if diff := cmp.Diff(want, vpa.Object); diff != "" {
		t.Errorf("vpa (-want,+got):\n%s", diff)
	}
}
