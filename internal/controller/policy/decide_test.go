package policy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// TestNamespaceBudgetDecidedInTurn: twelve policies of one namespace, each
// with three idle pods and a namespace budget of five pods an hour, decide
// at the same moment on twelve goroutines, as the manager's workers do,
// each given no other policy's lowerings, as a cache that has not seen any
// checkpoint yet would. Deciding in the namespace's turn, on what the
// ledger recorded, they lower five pods in all; a policy without a
// namespace budget deciding among them is not held, but its lowerings
// count in the others'. With the ledger but without the turn, policies
// that read it before another records spend the same room (7 or 8 pods
// lowered when that was tried); run under -race, the ledger's maps being
// shared by the goroutines.
func TestNamespaceBudgetDecidedInTurn(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{}
	const policies, budget = 12, 5
	var (
		mu      sync.Mutex
		lowered = map[string][]string{}
		wg      sync.WaitGroup
		errs    = make([]error, policies+1)
	)
	for k := range policies + 1 {
		name := fmt.Sprintf("p%d", k)
		withBudget := k < policies
		wg.Add(1)
		go func() {
			defer wg.Done()
			policy, in, input := idlePolicy(name, withBudget, budget, now)
			d, err := r.decideSync(context.Background(), policy, in, input)
			if err != nil {
				errs[k] = err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range d.Sends {
				lowered[name] = append(lowered[name], s.Pod.Name)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	free := fmt.Sprintf("p%d", policies)
	if got := len(lowered[free]); got != 3 {
		t.Errorf("the policy without a namespace budget lowered %v, want its 3 pods: no other's budget holds it", lowered[free])
	}
	budgeted := 0
	for name, pods := range lowered {
		if name != free {
			budgeted += len(pods)
		}
	}
	// The free policy may have decided before some of the others (its
	// three then count in theirs) or after all of them.
	if budgeted > budget || budgeted < budget-3 {
		t.Errorf("the policies with a namespace budget lowered %d pods (%v), want %d less what the free policy lowered before them, at most %d", budgeted, lowered, budget, budget)
	}
	sent := r.ledger.Sent("team", now)
	if n := len(sent.All()); n != budgeted+3 {
		t.Errorf("the ledger counts %d pods (%v), want the %d lowered", n, sent, budgeted+3)
	}
}

// idlePolicy is policy name of namespace team with three pods (name-0..)
// whose CPU the decision lowers from 500m to 200m, with or without a
// namespace budget of budget pods, gathered as a sync would: the
// namespace's other lowerings unknown.
func idlePolicy(name string, withBudget bool, budget int, now time.Time) (*v1alpha1.TailorPolicy, *syncInput, autoscale.SyncInput) {
	policy := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: v1alpha1.TailorPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Behavior: &v1alpha1.Behavior{MaxConcurrentResizes: ptr.To(int32(3))},
	}}
	if withBudget {
		policy.Spec.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{NamespacePods: ptr.To(intstr.FromInt32(int32(budget)))}}
	}
	var pods []fleet.PodInput
	var bound []*corev1.Pod
	for i := range 3 {
		p := builder.Pod(fmt.Sprintf("%s-%d", name, i)).UID(fmt.Sprintf("%s-%d", name, i)).Namespace("team").Node("n1").
			Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")).Running().Obj()
		bound = append(bound, p)
		pods = append(pods, fleet.PodInput{Pod: p, Targets: map[string]podchange.Target{"app": {CPU: ptr.To(resource.MustParse("200m"))}},
			WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")}})
	}
	in := &syncInput{namespaceBudget: withBudget, countLowerings: true}
	if withBudget {
		in.namespace = limits.NamespaceLowerings{Policy: name, ByPolicy: limits.LoweredBy{}}
	}
	input := autoscale.SyncInput{
		PolicyInput: fleet.PolicyInput{
			Spec: &policy.Spec, Pods: pods, Now: now, MemoryFloorHeadroom: MemoryFloorHeadroom, Server: resize.Version{Major: 1, Minor: 37},
			Nodes: map[string]*resize.NodeState{"n1": {Allocatable: builder.List("16", "64Gi"), Pods: bound}},
		},
		Lowered: limits.Lowered{}, Namespace: in.namespace, CountLowerings: true,
	}
	return policy, in, input
}
