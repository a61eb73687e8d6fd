//go:build controller

package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// roomPriorities are the PriorityClasses the room tests place pods at.
var roomPriorities = map[string]int32{"room-low": 10, "room-high": 1000, "room-top": 5000}

// fullNode makes a 3-core node and, on it, the test's busy pod busy-0
// (priority room-high, 1 core, throttled at its 1-core limit, its policy
// allowing up to 3 cores) beside two idle pods idle-a-0 and idle-b-0 of
// priority neighbours, each requesting 1 core and using 50m, each under
// its own policy: the node is full, and the busy pod's raise (to 1870m)
// has no room. Each idle pod could give 750m (a 75% step), so the raise
// needs both.
func fullNode(e *env, neighbours string) {
	e.t.Helper()
	roomPriorityClasses(e)
	node := e.addNode(e.node+"-full", "3", "8Gi")
	e.pod("busy", builder.Pod("busy-0").Node(node).PriorityClass("room-high").
		Container(builder.Container("app").Requests("1", "256Mi").Limits("1", "512Mi")))
	e.source.SetThrottled(e.ns, "busy-0", "app", 1.0, 200*mi, 0.8)
	e.policy("busy", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "app", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		}}}
	})
	for _, app := range []string{"idle-a", "idle-b"} {
		e.pod(app, builder.Pod(app+"-0").Node(node).PriorityClass(neighbours).
			Container(builder.Container("app").Requests("1", "256Mi").Limits("1", "512Mi")))
		e.source.Set(e.ns, app+"-0", "app", 0.05, 200*mi)
		e.policy(app, nil)
	}
}

// roomPriorityClasses makes the PriorityClasses of roomPriorities, which
// the tests share (cluster-scoped, made once).
func roomPriorityClasses(e *env) {
	e.t.Helper()
	for name, value := range roomPriorities {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if err := apiClient.Create(e.ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			e.t.Fatalf("create PriorityClass %s: %v", name, err)
		}
	}
}

// roomSync is one sync period: each policy named syncs in turn, then the
// kubelet answers.
func (e *env) roomSync(policies ...string) {
	e.t.Helper()
	e.clock.Step(syncPeriod)
	for _, p := range policies {
		e.reconcile(p)
	}
	e.kubelet.Sync(e.t, e.ns)
}

// A busy high-priority pod on a full node is raised in place once the two
// idle, over-requested low-priority pods beside it, each under its own
// policy, were lowered before their stabilization windows ended: no pod is
// evicted or restarted, and the events say who gave room to whom.
func TestRoomMadeInPlaceByPriority(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	fullNode(e, "room-low")
	uids := map[string]types.UID{}
	for _, p := range []string{"busy-0", "idle-a-0", "idle-b-0"} {
		uids[p] = e.getPod(p).UID
	}
	// The busy pod's raise finds the node full and seeks room there; the
	// idle pods' policies then say what they could give, and the busy pod
	// asks them.
	e.roomSync("idle-a", "idle-b", "busy")
	if n := e.events.count("busy-0", "RoomAsked"); n != 0 {
		t.Fatalf("busy-0 asked room before the pods beside it said what they could give:%s", e.events)
	}
	e.roomSync("idle-a", "idle-b", "busy")
	if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got != "1" {
		t.Fatalf("busy-0 raised to %s on a full node before any room was made", got)
	}
	if e.events.count("busy-0", "RoomAsked") != 1 {
		t.Fatalf("busy-0 asked no room:%s", e.events)
	}
	// Their policies lower them, each in its own sync, to what they need
	// now rather than after the 15-minute window; then the raise fits.
	e.roomSync("idle-a", "idle-b", "busy")
	e.roomSync("busy")

	for _, p := range []string{"idle-a-0", "idle-b-0"} {
		if got := requestOf(e.getPod(p), "app", corev1.ResourceCPU); got != "250m" {
			t.Errorf("%s cpu request %s, want 250m (a 75%% step toward its need)", p, got)
		}
		if !hasEvent(e, p, "RoomGiven", e.ns+"/busy-0 (priority 1000)") {
			t.Errorf("no RoomGiven event on %s naming busy-0:%s", p, e.events)
		}
	}
	if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got == "1" {
		t.Errorf("busy-0 not raised after room was made:%s", e.events)
	}
	if !hasEvent(e, "busy-0", "RoomMade", e.ns+"/idle-a-0, "+e.ns+"/idle-b-0") {
		t.Errorf("no RoomMade event on busy-0 naming both donors:%s", e.events)
	}
	for p, uid := range uids {
		got := e.getPod(p)
		if got.UID != uid || got.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("%s replaced or restarted (uid %s, was %s; %d restarts)", p, got.UID, uid, got.Status.ContainerStatuses[0].RestartCount)
		}
	}
	if n := e.events.count("", "Evicted") + e.events.count("", "EvictionBlocked"); n != 0 {
		t.Errorf("%d evictions:%s", n, e.events)
	}
}

// With only higher-priority neighbours, nothing is taken from them: the
// raise stays held NodeFull, and the policy says why no room was made.
func TestRoomNeverTakenFromHigherPriority(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	fullNode(e, "room-top")
	for range 3 {
		e.roomSync("idle-a", "idle-b", "busy")
	}
	for _, p := range []string{"idle-a-0", "idle-b-0"} {
		if got := requestOf(e.getPod(p), "app", corev1.ResourceCPU); got != "1" {
			t.Errorf("%s cpu request %s, want 1: a higher-priority pod gave room", p, got)
		}
	}
	if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got != "1" {
		t.Errorf("busy-0 raised to %s on a node with no room", got)
	}
	if n := e.events.count("", "RoomAsked") + e.events.count("", "RoomGiven"); n != 0 {
		t.Errorf("room asked or given of higher-priority pods:%s", e.events)
	}
	c := condition(e.getPolicy("busy"), v1alpha1.ConditionResizesBlocked)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "no room could be made") || !strings.Contains(c.Message, "2 HigherPriority") {
		t.Errorf("ResizesBlocked %+v, want it True saying no room could be made from 2 HigherPriority pods", c)
	}
}

// hasEvent reports whether an event with reason about object says text.
func hasEvent(e *env, object, reason, text string) bool {
	for _, ev := range e.events.all() {
		if ev.object == object && ev.reason == reason && strings.Contains(ev.note, text) {
			return true
		}
	}
	return false
}

// The room board is derived state, kept in memory only: a manager that
// restarts between the ask and the lowering has lost the ask, and the next
// syncs ask again and make the room.
func TestRoomAskedAgainAfterRestart(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	fullNode(e, "room-low")
	e.roomSync("idle-a", "idle-b", "busy")
	e.roomSync("idle-a", "idle-b", "busy")
	e.restart()
	// The donors' first syncs after the restart find no ask: their
	// windows stand; the busy pod seeks room again, they offer, and it
	// asks again.
	e.roomSync("idle-a", "idle-b", "busy")
	e.roomSync("idle-a", "idle-b", "busy")
	if got := requestOf(e.getPod("idle-a-0"), "app", corev1.ResourceCPU); got != "1" {
		t.Fatalf("idle-a-0 lowered to %s with no ask standing", got)
	}
	e.roomSync("idle-a", "idle-b", "busy")
	e.roomSync("busy")
	if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got == "1" {
		t.Errorf("busy-0 not raised after the restart:%s", e.events)
	}
	if n := e.events.count("", "RoomGiven"); n != 2 {
		t.Errorf("%d RoomGiven events, want 2:%s", n, e.events)
	}
}
