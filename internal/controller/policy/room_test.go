package policy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// A node newly sought for room wakes the policies of the pods on it, each
// once, but not the policy that seeks it, which looks again on its own.
func TestWakeOnNode(t *testing.T) {
	r := &Reconciler{store: store.New(), roomWake: make(chan event.GenericEvent, roomWakeBuffer)}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	for _, name := range []string{"busy", "idle", "other"} {
		r.store.Put(types.UID(name), &store.PolicyState{Key: key(name), Selector: labels.SelectorFromSet(labels.Set{"app": name}),
			Pods: map[types.UID]*store.PodState{}})
	}
	pod := func(name, app string) *corev1.Pod {
		p := builder.Pod(name).Namespace("ns").Node("n1").Obj()
		p.Labels = map[string]string{"app": app}
		return p
	}
	node := &resize.NodeState{Pods: []*corev1.Pod{pod("busy-0", "busy"), pod("idle-0", "idle"), pod("idle-1", "idle"), pod("stranger", "none")}}
	r.wakeOnNode(key("busy"), node)
	r.wakeOnNode(key("busy"), nil)
	close(r.roomWake)
	var woken []string
	for ev := range r.roomWake {
		woken = append(woken, ev.Object.GetNamespace()+"/"+ev.Object.GetName())
	}
	slices.Sort(woken)
	if !slices.Equal(woken, []string{"ns/idle"}) {
		t.Errorf("woken %v, want ns/idle once", woken)
	}
}

// A pod an agent wakes wakes the policies known to select it and, of the
// policies of its namespace, those not synced since the start, whose
// selection is not known yet; none of another namespace.
func TestPoliciesForWake(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	policy := func(ns, name string) *v1alpha1.TailorPolicy {
		return &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		policy("ns", "synced"), policy("ns", "other"), policy("ns", "unsynced"), policy("elsewhere", "unsynced")).Build()
	r := &Reconciler{Client: c, store: store.New()}
	for _, name := range []string{"synced", "other"} {
		r.store.Put(types.UID("ns/"+name), &store.PolicyState{Key: types.NamespacedName{Namespace: "ns", Name: name},
			Selector: labels.SelectorFromSet(labels.Set{"app": name}), Pods: map[types.UID]*store.PodState{}})
	}
	woken := func(app string) []string {
		p := builder.Pod("p").Namespace("ns").Obj()
		p.Labels = map[string]string{"app": app}
		var out []string
		for _, req := range r.policiesForWake(t.Context(), p) {
			out = append(out, req.String())
		}
		slices.Sort(out)
		return out
	}
	if got, want := woken("synced"), []string{"ns/synced", "ns/unsynced"}; !slices.Equal(got, want) {
		t.Errorf("a pod of a synced policy woke %v, want %v", got, want)
	}
	if got, want := woken("none"), []string{"ns/unsynced"}; !slices.Equal(got, want) {
		t.Errorf("a pod no synced policy selects woke %v, want %v", got, want)
	}
}
