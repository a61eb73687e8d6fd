package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubectl/pkg/util/podutils"
	"k8s.io/utils/ptr"
)

// RampStep is one stretch of a shared load: from the previous total to
// Total millicores, linearly over D.
type RampStep struct {
	Total int64
	D     time.Duration
}

// HPARamp is the load an HPA run serves: up to 420m shared by the
// replicas, held, then down to 60m. With requests of 200m and a 60%
// utilization target the HPA wants one replica idle and four at the peak.
var HPARamp = []RampStep{{60, 10 * time.Second}, {420, 60 * time.Second}, {420, 50 * time.Second}, {60, 30 * time.Second}, {60, 50 * time.Second}}

// HPARun is what one run counted.
type HPARun struct {
	// Replicas is the Deployment's spec.replicas at each change, as the
	// HPA set them.
	Replicas []int32
	// ChangedAt is when each of Replicas was first seen, from the ramp's
	// start.
	ChangedAt []time.Duration
	// Reversals is how often the replica count turned from rising to
	// falling or back: one for a ramp up and down, more for flapping.
	Reversals int
	// Resizes is the in-place resizes of the run's pods (each raises the
	// pod's generation).
	Resizes int64
	// FirstResize is when a resized pod was first seen, from the ramp's
	// start; 0 for none.
	FirstResize time.Duration
	// CPURequests are the cpu requests seen on the pods, any pod, any time.
	CPURequests map[string]bool
}

// MaxReplicas is the most replicas the run saw.
func (r HPARun) MaxReplicas() int32 {
	var m int32
	for _, n := range r.Replicas {
		m = max(m, n)
	}
	return m
}

func (r HPARun) String() string {
	var rs []string
	for i, n := range r.Replicas {
		rs = append(rs, fmt.Sprintf("%d (%s)", n, r.ChangedAt[i]))
	}
	var reqs []string
	for q := range r.CPURequests {
		reqs = append(reqs, q)
	}
	return fmt.Sprintf("replicas %s (%d changes, %d reversals), %d resizes (the first seen at %s), cpu requests seen %v", strings.Join(rs, " -> "), len(r.Replicas)-1, r.Reversals, r.Resizes, r.FirstResize, reqs)
}

// HPARampOptions say what runs beside the HPA.
type HPARampOptions struct {
	// Ramp is the load to serve; nil is HPARamp.
	Ramp []RampStep
	// Policy, when set, creates the TailorPolicy of the Deployment once
	// the HPA exists; nil is the HPA alone.
	Policy func(ctx context.Context) error
	// AtEnd, when set, runs after the ramp and before the Deployment and
	// its HPA are deleted, e.g. to read the policy's conditions.
	AtEnd func(ctx context.Context) error
}

// RunHPARamp creates a Deployment named name in ns (one replica of the
// load generator, 200m/64Mi requests, 400m/128Mi limits) with an HPA on
// 60% cpu utilization (1 to 4 replicas, a 30s scale-down window); drives
// o.Ramp across its ready pods as a load balancer would (each burns the
// total divided by their number), and counts what the HPA (and tailor, when
// o.Policy makes a policy) did. It deletes both at the end.
func RunHPARamp(ctx context.Context, cs kubernetes.Interface, ns, name string, o HPARampOptions) (HPARun, error) {
	dep := Deployment(ns, name, 1, Loadgen().Args("--listen=:8080", "--cpu=60m", "--memory=24Mi").Requests("200m", "64Mi").Limits("400m", "128Mi"))
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return HPARun{}, err
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}},
			// A short scale-down window, so a run sees the HPA scale in
			// (the default waits 5 minutes).
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](30)}},
		},
	}
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		return HPARun{}, err
	}
	defer func() {
		// Stop the load before the next run shares the node.
		bg := context.Background()
		_ = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Delete(bg, name, metav1.DeleteOptions{})
		_ = cs.AppsV1().Deployments(ns).Delete(bg, name, metav1.DeleteOptions{})
		_ = wait.PollUntilContextTimeout(bg, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			return err == nil && len(list.Items) == 0, nil
		})
	}()
	if o.Policy != nil {
		if err := o.Policy(ctx); err != nil {
			return HPARun{}, err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		return err == nil && len(list.Items) == 1 && list.Items[0].Status.Phase == corev1.PodRunning, err
	}); err != nil {
		return HPARun{}, fmt.Errorf("%s: no running pod: %w", name, err)
	}

	ramp := o.Ramp
	if ramp == nil {
		ramp = HPARamp
	}
	run := HPARun{CPURequests: map[string]bool{}}
	generations := map[string]int64{}
	set := map[string]int64{}
	var elapsed time.Duration
	for _, s := range ramp {
		elapsed += s.D
	}
	total := func(at time.Duration) int64 {
		prev := ramp[0].Total
		for _, s := range ramp {
			if at < s.D {
				return prev + (s.Total-prev)*int64(at)/int64(s.D)
			}
			at -= s.D
			prev = s.Total
		}
		return prev
	}
	start := time.Now()
	for time.Since(start) < elapsed {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return run, err
		}
		if n := *d.Spec.Replicas; len(run.Replicas) == 0 || run.Replicas[len(run.Replicas)-1] != n {
			run.Replicas = append(run.Replicas, n)
			run.ChangedAt = append(run.ChangedAt, time.Since(start).Round(time.Second))
		}
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return run, err
		}
		var ready []*corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			for _, ctr := range p.Spec.Containers {
				run.CPURequests[ctr.Resources.Requests.Cpu().String()] = true
			}
			generations[p.Name] = max(generations[p.Name], p.Generation)
			if p.Generation > 1 && run.FirstResize == 0 {
				run.FirstResize = time.Since(start).Round(time.Second)
			}
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
				if err := Drive(dctx, p, fmt.Sprintf("/cpu?millicores=%d", share)); err == nil {
					set[p.Name] = share
				}
				cancel()
			}
		}
		time.Sleep(2 * time.Second)
	}
	for _, g := range generations {
		run.Resizes += g - 1
	}
	dir := 0
	for i := 1; i < len(run.Replicas); i++ {
		d := 1
		if run.Replicas[i] < run.Replicas[i-1] {
			d = -1
		}
		if dir != 0 && d != dir {
			run.Reversals++
		}
		dir = d
	}
	if o.AtEnd != nil {
		if err := o.AtEnd(ctx); err != nil {
			return run, err
		}
	}
	return run, nil
}
