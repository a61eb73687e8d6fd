package manager

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/internal/shard"
)

// A wake-up names pods by UID on the reporting node: only those, of this
// shard, are queued; past the rate (and the queue) they are dropped, never
// blocking the report's handler.
func TestWaker(t *testing.T) {
	sh := shard.Shard{Index: 0, Count: 2}
	var mine, theirs string
	for i := 0; mine == "" || theirs == ""; i++ {
		ns := fmt.Sprintf("ns-%d", i)
		if sh.Owns(ns) && mine == "" {
			mine = ns
		} else if !sh.Owns(ns) && theirs == "" {
			theirs = ns
		}
	}
	var objs []client.Object
	pod := func(ns, name, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid")}, Spec: corev1.PodSpec{NodeName: node}}
		objs = append(objs, p)
		return p
	}
	pod(mine, "a", "node-1")
	pod(theirs, "b", "node-1")
	pod(mine, "c", "node-2")
	for i := range 200 {
		pod(mine, fmt.Sprintf("many-%d", i), "node-3")
	}
	c := fake.NewClientBuilder().WithObjects(objs...).WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}).Build()
	w := newWaker(c, sh, logr.Discard())

	// c is on another node than the report's: an agent speaks for its own.
	w.wake("node-1", []string{"a-uid", "b-uid", "c-uid"})
	if len(w.ch) != 1 {
		t.Fatalf("%d queued, want 1 (a)", len(w.ch))
	}
	if got := (<-w.ch).Object.GetName(); got != "a" {
		t.Errorf("queued %s, want a", got)
	}
	var uids []string
	for i := range 200 {
		uids = append(uids, fmt.Sprintf("many-%d-uid", i))
	}
	w.wake("node-3", uids)
	// The first wake-up took one token of the burst.
	if n := len(w.ch); n < wakeBurst-1 || n > wakeBurst+5 {
		t.Errorf("a burst of 200 queued %d, want about the %d the rate allows", n, wakeBurst)
	}
}
