package policy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

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
