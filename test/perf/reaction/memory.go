package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/test/cluster"
)

const mib = int64(1 << 20)

type rampResult struct {
	source   string
	trials   int
	seconds  []float64
	oomKills int
}

func measureRamps(m *running, cs *kubernetes.Clientset, o options, source string) rampResult {
	res := rampResult{source: source}
	for i := 0; i < o.memoryTrials; i++ {
		res.trials++
		secs, kills, err := rampTrial(m.ctx, m.client, cs, source, i)
		res.oomKills += kills
		if err != nil {
			fmt.Printf("  %s ramp %d: %v (%d OOM kills)\n", source, i+1, err, kills)
			continue
		}
		fmt.Printf("  %s ramp %d: limit raised after %.1fs, %d OOM kills\n", source, i+1, secs, kills)
		res.seconds = append(res.seconds, secs)
	}
	return res
}

// rampTrial grows a pod's memory from half its 256Mi limit to 384Mi at 50
// MiB/s, and returns how long until its memory limit was raised and how
// many times the kernel killed it.
func rampTrial(ctx context.Context, c client.Client, cs *kubernetes.Clientset, source string, i int) (float64, int, error) {
	ns := fmt.Sprintf("ramp-%s-%d-%d", source, i, time.Now().Unix()%100000)
	drop, err := trialNamespace(ctx, cs, ns)
	if err != nil {
		return 0, 0, err
	}
	defer drop()
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ramp", Labels: map[string]string{"app": "ramp"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: "app", Image: "tailor.local/loadgen:dev", Args: []string{"--memory=128Mi"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	// The load generator fills its 128Mi at start, fast: the policy comes
	// once that growth is out of the agent's reports (3s of samples, and a
	// report every 5s).
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "ramp", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		return 0, 0, fmt.Errorf("the pod did not start: %w", err)
	}
	time.Sleep(10 * time.Second)
	if _, err := recommending(ctx, c, ns, "ramp", corev1.ResourceMemory); err != nil {
		return 0, 0, err
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "ramp", metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	if lim := p.Spec.Containers[0].Resources.Limits.Memory().Value(); lim != 256*mib {
		return 0, 0, fmt.Errorf("memory limit %dMi before the ramp: resized while idle", lim/mib)
	}
	start := time.Now()
	raised := make(chan float64, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		_ = wait.PollUntilContextCancel(watchCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, "ramp", metav1.GetOptions{})
			if err == nil && got.Spec.Containers[0].Resources.Limits.Memory().Value() > 256*mib {
				raised <- time.Since(start).Seconds()
				return true, nil
			}
			return false, nil
		})
	}()
	rampErr := cluster.Ramp(ctx, p, 128*mib, 384*mib, 50*mib)
	var secs float64
	select {
	case secs = <-raised:
	case <-time.After(90 * time.Second):
	}
	// Let a kill that came at the end show in the status.
	time.Sleep(5 * time.Second)
	after, err := cs.CoreV1().Pods(ns).Get(ctx, "ramp", metav1.GetOptions{})
	if err != nil {
		return secs, 0, err
	}
	kills := 0
	if len(after.Status.ContainerStatuses) > 0 {
		st := after.Status.ContainerStatuses[0]
		kills = int(st.RestartCount)
		if t := st.LastTerminationState.Terminated; t != nil && t.Reason != "OOMKilled" && t.ExitCode != 137 {
			return secs, kills, fmt.Errorf("the container ended with %s (exit %d), not an OOM kill", t.Reason, t.ExitCode)
		}
	}
	if secs == 0 {
		msg := "memory limit not raised within 90s"
		if rampErr != nil {
			msg += " (the ramp broke off: " + firstLine(rampErr) + ")"
		}
		return 0, kills, errors.New(msg)
	}
	return secs, kills, nil
}

func firstLine(err error) string { return strings.SplitN(err.Error(), "\n", 2)[0] }

// agentCost is what the agent pod used beside a node full of containers.
type agentCost struct {
	containers    int
	over          time.Duration
	cores         float64
	workingSetMiB float64
	rssMiB        float64
}

// measureAgentCost starts pods of four pause containers each, so the agent
// reads about 100 containers (with the node's others), and reads the
// agent container's own cgroup over a minute: CPU time used, and its
// working set, sampled every 5s (the peak).
func measureAgentCost(ctx context.Context, cs *kubernetes.Clientset, ag *cluster.Agent, pods int) (*agentCost, error) {
	ns := fmt.Sprintf("agent-cost-%d", time.Now().Unix()%100000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace(ns, nil), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	defer func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()
	if err := cluster.WaitDefaultServiceAccount(ctx, cs, ns); err != nil {
		return nil, err
	}
	zero := int64(0)
	for i := 0; i < pods; i++ {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("idle-%d", i)},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, AutomountServiceAccountToken: new(bool)}}
		for j := 0; j < 4; j++ {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
				Name: fmt.Sprintf("c%d", j), Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("4Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
				},
			})
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == pods, nil
	}); err != nil {
		return nil, fmt.Errorf("the %d idle pods did not all start: %w", pods, err)
	}
	all, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	containers := 0
	for _, p := range all.Items {
		if p.Status.Phase == corev1.PodRunning {
			containers += len(p.Status.ContainerStatuses)
		}
	}
	// The agent has seen them all for a while.
	time.Sleep(15 * time.Second)
	agentPod, err := ag.Pod(ctx)
	if err != nil {
		return nil, err
	}
	id, err := cgroup.ContainerID(agentPod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		return nil, err
	}
	tree := cgroup.Tree{Root: "/sys/fs/cgroup", Version: cgroup.V1}
	read := func() (cgroup.Sample, error) { return tree.Read(agentPod.Status.QOSClass, string(agentPod.UID), id) }
	first, err := read()
	if err != nil {
		return nil, fmt.Errorf("reading the agent's own cgroup: %w", err)
	}
	const over = time.Minute
	start := time.Now()
	var peak uint64
	var last cgroup.Sample
	for time.Since(start) < over {
		time.Sleep(5 * time.Second)
		if last, err = read(); err != nil {
			return nil, err
		}
		peak = max(peak, last.WorkingSet)
	}
	took := time.Since(start)
	rss := float64(last.MemoryUsage) / float64(mib)
	return &agentCost{
		containers: containers, over: took.Round(time.Second),
		cores:         (last.CPUUsage - first.CPUUsage).Seconds() / took.Seconds(),
		workingSetMiB: float64(peak) / float64(mib), rssMiB: rss,
	}, nil
}
