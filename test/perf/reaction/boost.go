package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubectl/pkg/util/podutils"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

// boostResult is the time to Ready of a slow starter at its template's
// size (its policy in mode Off) and with a 4x startup boost, trial by
// trial, each pair started one after the other in a fresh namespace.
type boostResult struct {
	plain, boosted []float64
	failures       int
}

// ratio is the median boosted time to Ready over the median plain one:
// both come from the same run on the same node, so a slower machine moves
// both.
func (r boostResult) ratio() float64 {
	p := percentile(r.plain, 50)
	if p == 0 {
		return 0
	}
	return percentile(r.boosted, 50) / p
}

// measureBoost runs o.boostTrials pairs of starts. The gate's
// TestStartupBoost proves the mechanism (admitted boosted, taken back in
// place without a restart); this measures what it buys.
func measureBoost(m *running, cs *kubernetes.Clientset, dyn dynamic.Interface, o options) boostResult {
	var res boostResult
	for i := range o.boostTrials {
		plain, boosted, err := boostTrial(m.ctx, m.client, cs, dyn, i)
		if err != nil {
			fmt.Printf("  boost trial %d: %v\n", i+1, err)
			res.failures++
			continue
		}
		fmt.Printf("  boost trial %d: Ready after %.1fs plain, %.1fs boosted\n", i+1, plain, boosted)
		res.plain, res.boosted = append(res.plain, plain), append(res.boosted, boosted)
	}
	return res
}

func boostTrial(ctx context.Context, c client.Client, cs *kubernetes.Clientset, dyn dynamic.Interface, i int) (float64, float64, error) {
	ns := fmt.Sprintf("reaction-boost-%d-%d", i, time.Now().Unix()%100000)
	drop, err := trialNamespace(ctx, cs, ns)
	if err != nil {
		return 0, 0, err
	}
	defer drop()
	remove, err := cluster.ApplyAdmissionPolicies(ctx, dyn, cluster.AdmissionPolicyFile, ns)
	if remove != nil {
		defer func() { _ = remove() }()
	}
	if err != nil {
		return 0, 0, err
	}
	plain, err := startSlowStarter(ctx, c, cs, ns, "plain", v1alpha1.UpdateModeOff, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("plain: %w", err)
	}
	boosted, err := startSlowStarter(ctx, c, cs, ns, "boosted", v1alpha1.UpdateModeInPlace,
		&v1alpha1.StartupBoost{FactorPercent: ptr.To[int32](400), Duration: &metav1.Duration{Duration: 10 * time.Second}})
	if err != nil {
		return 0, 0, fmt.Errorf("boosted: %w", err)
	}
	return plain.Seconds(), boosted.Seconds(), nil
}

// startSlowStarter creates a Deployment of none of the load generator
// burning 3s of CPU time before it is Ready (15s at its 200m limit) and its
// policy, waits until the policy is read (and its boost is in
// status.admission), then scales it to one and returns the time to Ready.
func startSlowStarter(ctx context.Context, c client.Client, cs *kubernetes.Clientset, ns, name string, mode v1alpha1.UpdateMode, boost *v1alpha1.StartupBoost) (time.Duration, error) {
	dep := cluster.Deployment(ns, name, 0, cluster.Loadgen().Args("--listen=:8080", "--start-work=3s").Requests("100m", "64Mi").Limits("200m", "128Mi"))
	dep.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	policy := cluster.Policy(ns, name, func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
		s.StartupBoost = boost
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: mode}
	})
	if err := c.Create(ctx, policy); err != nil {
		return 0, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var got v1alpha1.TailorPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policy), &got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return got.Status.ObservedGeneration > 0 && (boost == nil || (got.Status.Admission != nil && got.Status.Admission.Boost != "")), nil
	}); err != nil {
		return 0, fmt.Errorf("policy never read (or its boost never in status.admission): %w", err)
	}
	start := time.Now()
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		return 0, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		return podutil.IsPodReady(&list.Items[0]), nil
	}); err != nil {
		return 0, fmt.Errorf("no Ready pod: %w", err)
	}
	return time.Since(start), nil
}
