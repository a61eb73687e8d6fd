package autoscale_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// canaryNow is the time of every canary case.
var canaryNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// canaryWorld is three pods of one workload (web-0..2, app at 500m/256Mi
// requested, 1/512Mi limits, Ready) on a big node, each wanting its CPU
// lowered to 200m, under a policy with a canary of the defaults and
// maxConcurrentResizes 3: what holds a pod back is the canary, not the
// pace.
type canaryWorld struct {
	spec  *v1alpha1.TailorPolicySpec
	pods  []fleet.PodInput
	state canary.State
	now   time.Time
	// answers are the query guardrails' answers the sync is given.
	answers map[string]canary.GuardrailAnswer
	// budget are the pods the lowering budget counted at the last sync.
	budget limits.Lowered
	// namespace is what a namespace budget is judged by, and
	// countLowerings whether one of the namespace counts the policy's.
	namespace      limits.NamespaceLowerings
	countLowerings bool
}

func newCanaryWorld() *canaryWorld {
	w := &canaryWorld{now: canaryNow, spec: &v1alpha1.TailorPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Behavior: &v1alpha1.Behavior{
			MaxConcurrentResizes: ptrTo(int32(3)),
			ScaleDown:            &v1alpha1.ScaleDownRules{Canary: &v1alpha1.Canary{}},
		},
	}}
	for i := range 3 {
		w.pods = append(w.pods, fleet.PodInput{
			Pod:        canaryPod(fmt.Sprintf("web-%d", i), "500m", "1"),
			Targets:    map[string]podchange.Target{"app": {CPU: quantity("200m")}},
			WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
		})
	}
	return w
}

func ptrTo[T any](v T) *T { return &v }

func quantity(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// canaryPod is a Ready, running pod with container app at cpu request and
// limit (memory 256Mi/512Mi); its UID is its name.
func canaryPod(name, cpu, cpuLimit string) *corev1.Pod {
	p := builder.Pod(name).UID(name).Node("n1").Container(builder.Container("app").Requests(cpu, "256Mi").Limits(cpuLimit, "512Mi")).Running().Obj()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// lowered makes pod i the canary lowered at `at` to 200m/400m, as the
// state a sync that lowered it left.
func (w *canaryWorld) lowered(i int, at time.Time) {
	before := w.pods[i].Pod
	w.pods[i].Pod = canaryPod(before.Name, "200m", "400m")
	w.pods[i].LastResize = at
	w.state.Pods = append(w.state.Pods, canary.Pod{
		UID: before.UID, Name: before.Name, LoweredAt: at, Ready: true, Restarts: map[string]int32{"app": 0},
		Before: canary.Values{"app": {Requests: builder.List("500m", "256Mi"), Limits: builder.List("1", "512Mi")}},
	})
}

func (w *canaryWorld) decide(t *testing.T) autoscale.SyncDecision {
	t.Helper()
	var bound []*corev1.Pod
	for _, p := range w.pods {
		bound = append(bound, p.Pod)
	}
	d, err := decide(autoscale.SyncInput{
		PolicyInput: fleet.PolicyInput{
			Spec: w.spec, Pods: w.pods, Now: w.now, MemoryFloorHeadroom: 0.1,
			Server: resize.Version{Major: 1, Minor: 37},
			Nodes:  map[string]*resize.NodeState{"n1": {Allocatable: builder.List("16", "64Gi"), Pods: bound}},
		},
		Canary: w.state, Guardrails: w.answers, Lowered: w.budget, Namespace: w.namespace, CountLowerings: w.countLowerings,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sends says each resize sent: "web-0 app cpu 500m -> 200m".
func sends(d autoscale.SyncDecision) []string {
	var out []string
	for _, s := range d.Sends {
		var parts []string
		for _, ch := range s.Decision.All() {
			parts = append(parts, fmt.Sprintf("%s %s %s -> %s", ch.Container, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String()))
		}
		out = append(out, s.Pod.Name+" "+strings.Join(parts, ", "))
	}
	return out
}

// holds says each pod held, and why: "web-1 Canary".
func holds(d autoscale.SyncDecision) []string {
	var out []string
	for _, h := range d.Held {
		out = append(out, h.Pod.Name+" "+string(h.Reason))
	}
	return out
}

func canaryNames(pods []canary.Pod) []string {
	var out []string
	for _, c := range pods {
		out = append(out, c.Name)
	}
	return out
}

// TestCanaryOffDecidesAsBefore: without behavior.scaleDown.canary,
// DecideSync decides what DecidePolicy alone does (but the sooner retry of
// a pod seeking room), whatever canary state it
// is handed (one left by a canary since removed from the policy), over the
// generator's policies, pods and nodes. FuzzCanaryOffDecidesAsBefore
// draws more.
func TestCanaryOffDecidesAsBefore(t *testing.T) {
	for seed := range uint64(500) {
		if msg := canaryOffCase(seed); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

func FuzzCanaryOffDecidesAsBefore(f *testing.F) {
	for i := range uint64(20) {
		f.Add(i)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		if msg := canaryOffCase(seed); msg != "" {
			t.Fatal(msg)
		}
	})
}

// canaryOffCase says how DecideSync with no canary differs from
// DecidePolicy on the generator's case seed; "" when it does not.
func canaryOffCase(seed uint64) string {
	in := autoscaletest.Case(seed)
	if b := in.Spec.Behavior; b != nil && b.ScaleDown != nil {
		b.ScaleDown.Canary = nil
	}
	want, err := fleet.DecidePolicy(in)
	if err != nil {
		return err.Error()
	}
	stale := canary.State{HoldUntil: in.Now.Add(time.Hour), Trips: 2,
		Pods: []canary.Pod{{UID: "p0", Name: "p0", LoweredAt: in.Now}}}
	for _, state := range []canary.State{{}, stale} {
		got, err := decide(autoscale.SyncInput{PolicyInput: in, Canary: state})
		if err != nil {
			return err.Error()
		}
		// A pod short of room seeks or asks it of the pods beside it,
		// and looks again soon: the only thing room-making adds.
		want := want
		for _, a := range got.Room.Asks {
			if a.Awaits() {
				want.RetryAfter = fleet.Soonest(want.RetryAfter, room.Retry)
			}
		}
		if diff := cmp.Diff(decisionText(want), decisionText(got.PolicyDecision)); diff != "" {
			return fmt.Sprintf("canary unset decides otherwise (-DecidePolicy,+DecideSync):\n%s", diff)
		}
		if got.Canary.Active || !got.Canary.State.IsZero() {
			return fmt.Sprintf("canary unset: outcome %+v, want none and its state forgotten", got.Canary)
		}
	}
	return ""
}

// TestCanaryNeverHoldsARaise: with a canary on the generator's policies,
// every pod DecidePolicy alone would raise is raised the same, whatever
// the canary holds; and before any canary proved anything, at most one pod
// is lowered.
func TestCanaryNeverHoldsARaise(t *testing.T) {
	lowers := func(d podchange.Decision) bool {
		for _, ch := range d.All() {
			if ch.RequestNow.Cmp(ch.RequestBefore) < 0 || (ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) < 0) {
				return true
			}
		}
		return false
	}
	raised := func(d podchange.Decision) []string {
		var out []string
		for _, ch := range d.All() {
			if ch.RequestNow.Cmp(ch.RequestBefore) > 0 || (ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) > 0) {
				out = append(out, fmt.Sprintf("%s %s %s/%v", ch.Container, ch.Resource, ch.RequestNow.String(), ch.LimitNow))
			}
		}
		return out
	}
	raises, loweredPods := 0, 0
	for seed := range uint64(500) {
		in := autoscaletest.Case(seed)
		for i := range in.Pods {
			p := in.Pods[i].Pod.DeepCopy()
			p.UID = types.UID(p.Name)
			in.Pods[i].Pod = p
		}
		if in.Spec.Behavior == nil {
			in.Spec.Behavior = &v1alpha1.Behavior{}
		}
		if in.Spec.Behavior.ScaleDown == nil {
			in.Spec.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{}
		}
		in.Spec.Behavior.ScaleDown.Canary = nil
		alone, err := fleet.DecidePolicy(in)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		in.Spec.Behavior.ScaleDown.Canary = &v1alpha1.Canary{}
		got, err := decide(autoscale.SyncInput{PolicyInput: in})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		sent := map[string]podchange.Decision{}
		n := 0
		for _, a := range got.Resizes {
			sent[a.Pod.Name] = a.Decision
			if lowers(a.Decision) {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("seed %d: %d pods lowered with no canary proven, want at most 1", seed, n)
		}
		loweredPods += n
		for _, a := range alone.Resizes {
			want := raised(a.Decision)
			if len(want) == 0 {
				continue
			}
			raises++
			if diff := cmp.Diff(want, raised(sent[a.Pod.Name])); diff != "" {
				t.Fatalf("seed %d: pod %s's raise with a canary (-alone,+canary):\n%s", seed, a.Pod.Name, diff)
			}
		}
	}
	if raises < 50 || loweredPods < 50 {
		t.Errorf("%d raises and %d canary lowerings in 500 cases: the generator no longer exercises them", raises, loweredPods)
	}
}

// decisionText says a policy decision in full, for comparison.
func decisionText(d fleet.PolicyDecision) []string {
	var out []string
	for _, a := range d.Resizes {
		out = append(out, fmt.Sprintf("send %s %v", a.Pod.Name, a.Decision.Desired))
	}
	for _, h := range d.Held {
		out = append(out, fmt.Sprintf("held %s %s %s", h.Pod.Name, h.Reason, h.Message))
	}
	for name, dec := range d.Decisions {
		out = append(out, fmt.Sprintf("decision %s %v %v", name, dec.Desired, dec.Skips))
	}
	out = append(out, fmt.Sprintf("retry %s", d.RetryAfter))
	slices.Sort(out)
	return out
}
