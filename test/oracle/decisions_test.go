package oracle

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/cluster"
)

var flagDecisions = flag.Int("oracle.decisions", 400, "number of generated DecidePolicy cases whose resizes are sent to the apiserver")

// TestDecisionsAcceptedByTheApiserver draws the cases the invariant fuzz of
// internal/autoscale checks offline, runs DecidePolicy on each, and sends
// every resize it chooses to the real apiserver as a server-side dry run:
// the apiserver must accept it, apply exactly the resources the decision
// planned, and keep the pod's QoS class.
//
// The pods are created scheduling-gated and unbound (the generator's node
// name is dropped), so the apiserver's node-capacity admission does not
// apply: the node's room is DecidePolicy's own promise, checked by the
// invariant fuzz. Each case's pods are drawn fresh, so a pod serves one
// resize and is deleted straight after.
func TestDecisionsAcceptedByTheApiserver(t *testing.T) {
	cluster.Quiet(t)
	ctx, cs, server, ns := connect(t, 20*time.Minute)
	start := time.Now()
	r := rand.New(rand.NewPCG(*flagSeed, 0xdec1))
	var resizes, podLevel, refused int
	for i := range *flagDecisions {
		seed := r.Uint64()
		in := autoscaletest.Case(seed)
		if in.Server != server {
			t.Fatalf("the generator decides for Kubernetes %v, the apiserver is %v: make autoscaletest draw for this version", in.Server, server)
		}
		d, err := fleet.DecidePolicy(in)
		if err != nil {
			t.Fatalf("case %d (seed %d): DecidePolicy: %v", i, seed, err)
		}
		for _, a := range d.Resizes {
			resizes++
			if a.Pod.Spec.Resources != nil {
				podLevel++
			}
			if msg := sendDecision(ctx, cs, ns, server, fmt.Sprintf("d%04d-%s", i, a.Pod.Name), a); msg != "" {
				refused++
				t.Errorf("case %d (seed %d, autoscaletest.Case(%d)), pod %s: %s", i, seed, seed, a.Pod.Name, msg)
			}
		}
	}
	t.Logf("decisions: %d generated cases (seed %d), %d resizes sent to the apiserver as dry runs (%d with pod-level resources), %d refused, in %s",
		*flagDecisions, *flagSeed, resizes, podLevel, refused, time.Since(start).Round(time.Millisecond))
	if resizes < *flagDecisions/4 {
		t.Errorf("only %d resizes in %d cases: the generator no longer exercises the decision", resizes, *flagDecisions)
	}
}

// sendDecision creates the action's pod gated in ns as name, sends the
// decided resize as a dry run and deletes the pod. It returns what went
// wrong, or "".
func sendDecision(ctx context.Context, cs kubernetes.Interface, ns string, server resize.Version, name string, a fleet.Action) string {
	pod := gatedCopy(a.Pod, ns, name)
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Sprintf("the apiserver refuses to create the generated pod: %v\n%s", err, podSummary(pod))
	}
	defer func() {
		grace := int64(0)
		// A pod left behind goes with the namespace.
		_ = cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}()
	// The patch carries the generated pod's resourceVersion; plan the same
	// desired resources against the created pod to carry its own.
	plan, err := resize.Plan(resize.Input{Pod: created, Desired: a.Decision.Desired, Server: server})
	if err != nil {
		return fmt.Sprintf("planner error on the created pod: %v", err)
	}
	want := a.Plan.AfterPod()
	if plan.Outcome != resize.Accepted || !sameResources(want, plan.AfterPod()) {
		return fmt.Sprintf("the created pod differs from the generated one: planned again it is %s %s %s\n--- generated\n%s--- created\n%s",
			plan.Outcome, plan.Rule, plan.Message, podSummary(a.Pod), podSummary(created))
	}
	got, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, plan.Patch,
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
	if err != nil {
		msg := err.Error()
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			msg = se.Status().Message
		}
		return fmt.Sprintf("the apiserver refuses the resize DecidePolicy chose (tailor: %s %s)\n--- pod\n%s--- patch\n%s\n--- apiserver: %s",
			plan.Outcome, plan.Rule, podSummary(created), plan.Patch, msg)
	}
	if !sameResources(want, got) {
		return fmt.Sprintf("the apiserver applies other resources than DecidePolicy planned\n--- planned\n%s--- apiserver\n%s--- patch\n%s",
			podSummary(want), podSummary(got), plan.Patch)
	}
	if got.Status.QOSClass != created.Status.QOSClass || qos.ComputePodQOS(got) != created.Status.QOSClass {
		return fmt.Sprintf("QoS class %s becomes %s (status %s)\n--- patch\n%s",
			created.Status.QOSClass, qos.ComputePodQOS(got), got.Status.QOSClass, plan.Patch)
	}
	return ""
}

// gatedCopy is p as a pod the apiserver can create in ns: unbound and held
// by a scheduling gate, with the oracle's image in every container.
func gatedCopy(p *corev1.Pod, ns, name string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       *p.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = ""
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "tailor.dev/oracle"})
	grace := int64(0)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Image = *flagImage
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Image = *flagImage
	}
	return pod
}

// sameResources compares every container's and the pod-level resources.
func sameResources(a, b *corev1.Pod) bool {
	resources := func(p *corev1.Pod) map[string]corev1.ResourceRequirements {
		out := map[string]corev1.ResourceRequirements{}
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			out[c.Name] = c.Resources
		}
		if p.Spec.Resources != nil {
			out[podcontainers.PodLevelName] = *p.Spec.Resources
		}
		return out
	}
	return apiequality.Semantic.DeepEqual(resources(a), resources(b))
}
