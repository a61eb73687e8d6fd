//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

// A Deployment with an HPA on cpu utilization and a TailorPolicy (new pods
// admitted through tailor-admission), under a load that ramps up and down:
// tailor keeps every cpu request as the HPA knows it, so it never makes the
// HPA scale by itself, and sizes what is its own (memory, the cpu limit).
// The ramp rises once and falls once, at most one reversal of the replica
// count; the HPA alone turned once in every recorded run, so two allow one
// wobble at the top and a third is flapping. How the counts compare with
// the HPA alone over several ramps is make bench-e2e's figure (hpa), not
// this gate.
func TestHPACoexistence(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmission(t)
	const name = "together"

	var held *metav1.Condition
	with, err := cluster.RunHPARamp(context.Background(), clientset, ns, name, cluster.HPARampOptions{
		Ramp: gateRamp,
		Policy: func(ctx context.Context) error {
			return c.Create(ctx, cluster.Policy(ns, name, func(s *v1alpha1.TailorPolicySpec) {
				s.Selector = nil
				s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
				// tailor's defaults, as a team would run it, but for as
				// many resizes at once as the HPA makes replicas.
				s.Behavior.MaxConcurrentResizes = ptr(int32(4))
				s.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Minute}
			}))
		},
		AtEnd: func(ctx context.Context) error {
			p := &v1alpha1.TailorPolicy{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return err
			}
			held = meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRequestsHeldForHPA)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("HPA ramp: %v", err)
	}
	t.Logf("HPA and tailor: %s", with)

	if held == nil || held.Status != metav1.ConditionTrue || !strings.Contains(held.Message, "HorizontalPodAutoscaler together scales on cpu utilization (60%)") {
		t.Errorf("condition %s = %s; want True naming the HPA", v1alpha1.ConditionRequestsHeldForHPA, mustJSON(held))
	} else {
		t.Logf("%s: %s", held.Type, held.Message)
	}
	if len(with.CPURequests) != 1 || !with.CPURequests["200m"] {
		t.Errorf("cpu requests seen with tailor: %v; want only the template's 200m, which the HPA divides by", with.CPURequests)
	}
	if with.MaxReplicas() < 3 {
		t.Errorf("the HPA did not scale out under the ramp (%v): the run proves nothing", with.Replicas)
	}
	if with.Reversals > 2 {
		t.Errorf("replica count reversed %d times under one ramp up and down: tailor makes the HPA flap", with.Reversals)
	}
	if with.Resizes == 0 {
		t.Errorf("tailor resized nothing: memory and the cpu limit are its to size")
	}
}

// gateRamp is cluster.HPARamp in 140s instead of 200s: the climb to 420m
// takes 40s, not 60s, and the peak and the tail are shorter. At 60% of
// 200m the HPA wants three replicas above 240m and four above 360m; it
// reached four 51s into HPARamp's 60s climb (at 366m), so a 40s peak at
// 420m still makes it scale out to the three this test asks for. Whether
// it comes all the way back down before the end is bench-e2e's to count,
// over the whole ramp.
var gateRamp = []cluster.RampStep{{Total: 60, D: 10 * time.Second}, {Total: 420, D: 40 * time.Second}, {Total: 420, D: 40 * time.Second}, {Total: 60, D: 20 * time.Second}, {Total: 60, D: 30 * time.Second}}
