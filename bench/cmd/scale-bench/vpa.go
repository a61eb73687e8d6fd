package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The VPA run (source "vpa") puts VPA 1.8's recommender and updater on the
// same simulated fleet instead of tailor: the same nodes, pods, usage and
// metrics.k8s.io stand-in (the metrics-server source's), one
// VerticalPodAutoscaler per workload where tailor has one policy, in mode
// InPlace (the updater resizes in place and never evicts, as tailor), each
// workload's pods owned by a ReplicaSet of a Deployment its VPA targets
// (VPA matches pods to VPAs through their owners; tailor's runs keep
// selector policies and ownerless pods). Its admission controller is not
// run: no pod is created during a run.

var vpaGVR = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

// vpaInterval is how often the recommender and the updater act: upstream's
// default, which is what a user runs.
const vpaInterval = time.Minute

// vpaOwners creates, for every workload, the Deployment its VPA targets
// and the ReplicaSet its pods name as their controller, and returns each
// workload's ReplicaSet UID.
func (c *cluster) vpaOwners(ctx context.Context, l layout) (map[string]types.UID, error) {
	uids := make([]types.UID, l.Policies)
	err := parallel(ctx, l.Policies, func(i int) error {
		ns, app := l.namespace(i), l.workload(i)
		replicas := int32(l.Pods / l.Policies)
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel, Template: tmpl}}
		if err := c.c.Create(ctx, d); err != nil {
			return fmt.Errorf("creating deployment %s/%s: %w", ns, app, err)
		}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-rs", Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: app, UID: d.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: sel, Template: tmpl}}
		if err := c.c.Create(ctx, rs); err != nil {
			return fmt.Errorf("creating replicaset %s/%s: %w", ns, rs.Name, err)
		}
		uids[i] = rs.UID
		return nil
	})
	out := map[string]types.UID{}
	for i, uid := range uids {
		out[l.workload(i)] = uid
	}
	return out, err
}

// createVPAs creates one VerticalPodAutoscaler per workload, its bounds
// those of tailor's policies.
func (c *cluster) createVPAs(ctx context.Context, l layout) error {
	return parallel(ctx, l.Policies, func(i int) error {
		v := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
			"metadata": map[string]any{"namespace": l.namespace(i), "name": l.workload(i)},
			"spec": map[string]any{
				"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": l.workload(i)},
				"updatePolicy": map[string]any{"updateMode": "InPlace", "minReplicas": int64(1)},
				"resourcePolicy": map[string]any{"containerPolicies": []any{map[string]any{
					"containerName": "*",
					"minAllowed":    map[string]any{"cpu": "50m", "memory": "64Mi"},
					"maxAllowed":    map[string]any{"cpu": "4", "memory": "8Gi"},
				}}},
			},
		}}
		if _, err := c.dyn.Resource(vpaGVR).Namespace(l.namespace(i)).Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating VPA %s/%s: %w", l.namespace(i), l.workload(i), err)
		}
		return nil
	})
}

// waitVPAsRecommend waits until every VPA has a recommendation: VPA's
// first pass.
func waitVPAsRecommend(ctx context.Context, cl *cluster, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := cl.dyn.Resource(vpaGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		done := 0
		for _, v := range list.Items {
			if recs, found, _ := unstructured.NestedSlice(v.Object, "status", "recommendation", "containerRecommendations"); found && len(recs) > 0 {
				done++
			}
		}
		if done == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s only %d of %d VPAs have a recommendation", timeout, done, want)
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// runVPA runs VPA's recommender and updater on the populated fleet and
// measures them as measureWindow measures tailor: each one's memory and
// CPU (per sync period of tailor's, so the rows compare), and together
// the time to a recommendation for every workload and the resizes sent.
func runVPA(ctx context.Context, o options, cl *cluster, rz *resizer, s size, work string, res *result) error {
	common := []string{"--kubeconfig", cl.kubeconfig, "--address", "127.0.0.1:0"}
	components := []struct {
		name string
		args []string
	}{
		{"recommender", append(slices.Clone(common), "--recommender-interval", vpaInterval.String())},
		// Without the admission controller, whose status lease the
		// updater waits for by default.
		{"updater", append(slices.Clone(common), "--updater-interval", vpaInterval.String(), "--feature-gates", "InPlace=true",
			"--use-admission-controller-status=false", "--min-replicas", "1")},
	}
	procs := make([]*managerProc, len(components))
	for i, c := range components {
		p, err := startProcess(filepath.Join(o.vpaBin, "vpa-"+c.name), c.args, filepath.Join(work, "vpa-"+c.name+".log"))
		if err != nil {
			return err
		}
		defer p.stop()
		procs[i] = p
	}
	started := time.Now()
	if err := waitVPAsRecommend(ctx, cl, s.Policies, 10*time.Minute); err != nil {
		return fmt.Errorf("%w (VPA's logs in %s)", err, work)
	}
	res.FirstPassSeconds = time.Since(started).Seconds()
	fmt.Printf("first pass: every VPA has a recommendation %.1fs after VPA started\n", res.FirstPassSeconds)
	// The window spans three of VPA's loops, each component's figures
	// the same as tailor's, over as many of tailor's sync periods.
	window := 3 * vpaInterval
	syncs := window.Seconds() / o.syncPeriod.Seconds()
	before := make([]procStats, len(procs))
	for i, p := range procs {
		st, err := p.stats()
		if err != nil {
			return err
		}
		before[i] = st
	}
	bumps := rz.bumps.Load()
	rss := make([]int64, len(procs))
	samples := 0
	for end := time.Now().Add(window); time.Now().Before(end); samples++ {
		if err := sleep(ctx, 5*time.Second); err != nil {
			return err
		}
		for i, p := range procs {
			st, err := p.stats()
			if err != nil {
				return fmt.Errorf("vpa-%s: %w (its log: %s)", components[i].name, err, work)
			}
			rss[i] += st.rss
		}
	}
	res.ResizesSentPerSync = round2(float64(rz.bumps.Load()-bumps) / syncs)
	for i, p := range procs {
		st, err := p.stats()
		if err != nil {
			return err
		}
		fig := managerFigures{Shard: i, Component: "vpa-" + components[i].name, Policies: s.Policies, Pods: s.Pods,
			RSSPeakBytes: st.hwm, RSSSteadyBytes: rss[i] / int64(max(1, samples)),
			CPUSecondsPerSync: round2((st.cpu - before[i].cpu) / syncs)}
		res.Managers = append(res.Managers, fig)
		res.RSSPeakBytes += fig.RSSPeakBytes
		res.RSSSteadyBytes += fig.RSSSteadyBytes
		res.CPUSecondsPerSync += fig.CPUSecondsPerSync
		fmt.Printf("%s: RSS peak %s MiB, steady %s MiB, CPU %.2f s per %s\n", fig.Component, mib(fig.RSSPeakBytes), mib(fig.RSSSteadyBytes), fig.CPUSecondsPerSync, o.syncPeriod)
	}
	res.CPUSecondsPerSync = round2(res.CPUSecondsPerSync)
	fmt.Printf("VPA (recommender and updater): RSS peak %s MiB, steady %s MiB, CPU %.2f s per %s, %.2f resizes per %s\n",
		mib(res.RSSPeakBytes), mib(res.RSSSteadyBytes), res.CPUSecondsPerSync, o.syncPeriod, res.ResizesSentPerSync, o.syncPeriod)
	return nil
}
