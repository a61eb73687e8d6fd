//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	podutil "k8s.io/kubectl/pkg/util/podutils"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

// rampStep is one stretch of the shared load: from the previous total to
// total millicores, linearly over d.
type rampStep struct {
	total int64
	d     time.Duration
}

// The load every run of TestHPACoexistence serves: up to 420m shared by the
// replicas, held, then down to 60m. With requests of 200m and a 60%
// utilization target the HPA wants one replica idle and four at the peak.
var hpaRamp = []rampStep{{60, 10 * time.Second}, {420, 60 * time.Second}, {420, 50 * time.Second}, {60, 30 * time.Second}, {60, 50 * time.Second}}

// hpaRun is what one run counted.
type hpaRun struct {
	// replicas is the Deployment's spec.replicas at each change, as the
	// HPA set them.
	replicas []int32
	// reversals is how often the replica count turned from rising to
	// falling or back: one for a ramp up and down, more for flapping.
	reversals int
	// resizes is the in-place resizes of the run's pods (each raises the
	// pod's generation).
	resizes int64
	// cpuRequests are the cpu requests seen on the pods, any pod, any time.
	cpuRequests map[string]bool
	// held is the policy's RequestsHeldForHPA condition at the run's end.
	held *metav1.Condition
}

func (r hpaRun) String() string {
	var rs []string
	for _, n := range r.replicas {
		rs = append(rs, fmt.Sprint(n))
	}
	var reqs []string
	for q := range r.cpuRequests {
		reqs = append(reqs, q)
	}
	return fmt.Sprintf("replicas %s (%d changes, %d reversals), %d resizes, cpu requests seen %v", strings.Join(rs, "->"), len(r.replicas)-1, r.reversals, r.resizes, reqs)
}

// runHPARamp creates a Deployment named name with an HPA on 60% cpu
// utilization and a TailorPolicy on it; drives hpaRamp
// across its ready pods as a load balancer would (each burns the total
// divided by their number), and counts what the HPA and tailor did.
func runHPARamp(t *testing.T, c client.Client, ns, name string) hpaRun {
	t.Helper()
	ctx := context.Background()
	deployment(t, ns, name, 1, app().Args("--listen=:8080", "--cpu=60m", "--memory=24Mi").Requests("200m", "64Mi").Limits("400m", "128Mi"))
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr(int32(1)),
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(60))}}}},
			// A short scale-down window, so a run sees the HPA scale in
			// (the default waits 5 minutes).
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(30))}},
		},
	}
	if _, err := clientset.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applyPolicy(t, c, ns, name, func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
		// tailor's defaults, as a team would run it, but for as many
		// resizes at once as the HPA makes replicas.
		s.Behavior.MaxConcurrentResizes = ptr(int32(4))
		s.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Minute}
	})
	livePods(t, ns, name, 1, nil)

	run := hpaRun{cpuRequests: map[string]bool{}}
	generations := map[string]int64{}
	set := map[string]int64{}
	start := time.Now()
	var elapsed time.Duration
	for _, s := range hpaRamp {
		elapsed += s.d
	}
	total := func(at time.Duration) int64 {
		prev := hpaRamp[0].total
		for _, s := range hpaRamp {
			if at < s.d {
				return prev + (s.total-prev)*int64(at)/int64(s.d)
			}
			at -= s.d
			prev = s.total
		}
		return prev
	}
	for time.Since(start) < elapsed {
		dep, err := clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := *dep.Spec.Replicas; len(run.replicas) == 0 || run.replicas[len(run.replicas)-1] != n {
			run.replicas = append(run.replicas, n)
		}
		list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			t.Fatal(err)
		}
		var ready []*corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			for _, ctr := range p.Spec.Containers {
				run.cpuRequests[ctr.Resources.Requests.Cpu().String()] = true
			}
			generations[p.Name] = max(generations[p.Name], p.Generation)
			if p.DeletionTimestamp.IsZero() && p.Status.PodIP != "" && podutil.IsPodReady(p) {
				ready = append(ready, p)
			}
		}
		if len(ready) > 0 {
			share := total(time.Since(start)) / int64(len(ready))
			for _, p := range ready {
				if set[p.Name] == share {
					continue
				}
				// A pod not listening yet is asked again next round.
				dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				if err := cluster.Drive(dctx, p, fmt.Sprintf("/cpu?millicores=%d", share)); err == nil {
					set[p.Name] = share
				}
				cancel()
			}
		}
		time.Sleep(2 * time.Second)
	}
	for _, g := range generations {
		run.resizes += g - 1
	}
	p := &v1alpha1.TailorPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	run.held = meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRequestsHeldForHPA)
	dir := 0
	for i := 1; i < len(run.replicas); i++ {
		d := 1
		if run.replicas[i] < run.replicas[i-1] {
			d = -1
		}
		if dir != 0 && d != dir {
			run.reversals++
		}
		dir = d
	}
	// Stop the load before the next run shares the node.
	if err := clientset.AutoscalingV2().HorizontalPodAutoscalers(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clientset.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		return err == nil && len(list.Items) == 0, nil
	})
	return run
}

// A Deployment with an HPA on cpu utilization and a TailorPolicy (new pods
// admitted through tailor-admission), under a load that ramps up and down:
// tailor keeps every cpu request as the HPA knows it, so it never makes the
// HPA scale by itself, and sizes what is its own (memory, the cpu limit).
// The ramp rises once and falls once, one reversal of the replica count;
// the HPA alone turned once in every recorded run, so two allow one wobble
// at the top and a third is flapping. How the counts compare with the HPA
// alone over many ramps is a figure for make bench-e2e, not this gate.
func TestHPACoexistence(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmission(t)

	with := runHPARamp(t, c, ns, "together")
	t.Logf("HPA and tailor: %s", with)

	if held := with.held; held == nil || held.Status != metav1.ConditionTrue || !strings.Contains(held.Message, "HorizontalPodAutoscaler together scales on cpu utilization (60%)") {
		t.Errorf("condition %s = %s; want True naming the HPA", v1alpha1.ConditionRequestsHeldForHPA, mustJSON(held))
	} else {
		t.Logf("%s: %s", held.Type, held.Message)
	}
	if len(with.cpuRequests) != 1 || !with.cpuRequests["200m"] {
		t.Errorf("cpu requests seen with tailor: %v; want only the template's 200m, which the HPA divides by", with.cpuRequests)
	}
	if maxOf(with.replicas) < 3 {
		t.Errorf("the HPA did not scale out under the ramp (%v): the run proves nothing", with.replicas)
	}
	if with.reversals > 2 {
		t.Errorf("replica count reversed %d times under one ramp up and down: tailor makes the HPA flap", with.reversals)
	}
	if with.resizes == 0 {
		t.Errorf("tailor resized nothing: memory and the cpu limit are its to size")
	}
}

func maxOf(xs []int32) int32 {
	var m int32
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
