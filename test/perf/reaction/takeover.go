package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubectl/pkg/util/podutils"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/shard"
	"github.com/tailorhq/tailor/test/cluster"
)

const (
	// takeoverPods is how many pods the trial's policy resizes.
	takeoverPods = 3
	takeoverApp  = "web"
	// standbyWarm is how long a standby started mid-trial runs before the
	// leader is stopped: its caches synced and the lease read several
	// times, as a standby that has run for long.
	standbyWarm = 10 * time.Second
)

// takeoverFloors are the policy's memory minAllowed in MiB, above the
// about 280Mi tailor recommends for the pods' 24Mi (the peak plus 5% and at
// least 256Mi): the first from the start, the second set once the crashed
// leader is dead, the third once the gracefully stopped one has exited.
// Each is a resize of every pod that only the new leader can make.
var takeoverFloors = [3]int64{384, 448, 512}

// failover is one takeover, timed from the signal to the leader.
type failover struct {
	// exited is when the leader's process had exited; lease, when the
	// standby took the lease (the Lease's acquireTime, written by the new
	// holder); resize, when the new leader's first resize was made (the
	// pod's managedFields, by the apiserver's clock).
	exited, lease, resize time.Duration
}

func (f failover) String() string {
	return fmt.Sprintf("lease taken %.1fs, first resize %.1fs (leader exited %.1fs)", f.lease.Seconds(), f.resize.Seconds(), f.exited.Seconds())
}

// takeoverResult is, per way of stopping the leader, the trials' failovers.
type takeoverResult struct {
	crash, graceful                 []failover
	crashFailures, gracefulFailures int
}

// measureTakeover runs o.takeoverTrials trials, each in a fresh namespace
// with two managers under leader election: the leader is SIGKILLed (a
// crash: the standby waits out the lease), then, with a new standby, the
// new leader is SIGTERMed (a graceful stop: tailor sets controller-runtime's
// LeaderElectionReleaseOnCancel, so the lease is released once its
// controllers have stopped). The gate's TestLeaderFailover proves the
// mechanism (the batch finished, no pod resized twice, the checkpoint
// resumed); this measures how long the takeover takes.
func measureTakeover(cs *kubernetes.Clientset, c client.Client, o options) (takeoverResult, error) {
	var res takeoverResult
	if _, err := os.Stat(o.tailorBin); err != nil {
		return res, fmt.Errorf("the tailor binary, run as the managers' processes (make build): %w", err)
	}
	dir, err := os.MkdirTemp("", "tailor-takeover-")
	if err != nil {
		return res, err
	}
	fmt.Printf("takeover: the managers' logs are in %s\n", dir)
	for i := range o.takeoverTrials {
		crash, graceful, err := takeoverTrial(context.Background(), cs, c, o, dir, i)
		line := fmt.Sprintf("  takeover trial %d:", i+1)
		if crash != nil {
			res.crash = append(res.crash, *crash)
			line += " SIGKILL: " + crash.String() + ";"
		} else {
			res.crashFailures++
		}
		if graceful != nil {
			res.graceful = append(res.graceful, *graceful)
			line += " SIGTERM: " + graceful.String()
		} else {
			res.gracefulFailures++
		}
		if err != nil {
			line += " " + err.Error()
		}
		fmt.Println(line)
	}
	return res, nil
}

// takeoverTrial sets up the pods, their policy and two managers in a
// namespace of its own, then stops the leader twice: a crash, then a
// graceful stop. It returns what it measured before any error.
func takeoverTrial(ctx context.Context, cs *kubernetes.Clientset, c client.Client, o options, dir string, i int) (crash, graceful *failover, err error) {
	ns := fmt.Sprintf("reaction-takeover-%d-%d", i, time.Now().Unix()%100000)
	drop, err := trialNamespace(ctx, cs, ns)
	if err != nil {
		return nil, nil, err
	}
	defer drop()
	dep := cluster.Deployment(ns, takeoverApp, takeoverPods,
		cluster.Loadgen().Args("--listen=:8080", "--memory=24Mi").Requests("50m", "256Mi").Limits("100m", "1Gi"))
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	if err := c.Create(ctx, cluster.Policy(ns, takeoverApp, memoryFloor(takeoverFloors[0]))); err != nil {
		return nil, nil, err
	}

	var managers []*managerProcess
	defer func() {
		for _, m := range managers {
			m.stop()
		}
		if err != nil {
			for _, m := range managers {
				fmt.Printf("  log of manager %s (last 20 lines):\n    %s\n", m.name, strings.ReplaceAll(m.tail(20), "\n", "\n    "))
			}
		}
	}()
	start := func() (*managerProcess, error) {
		m, err := startManagerProcess(o.tailorBin, o.kubeconfig, dir, fmt.Sprintf("trial%d-m%d", i+1, len(managers)), ns, o.syncPeriod)
		if err == nil {
			managers = append(managers, m)
		}
		return m, err
	}
	a, err := start()
	if err != nil {
		return nil, nil, err
	}
	b, err := start()
	if err != nil {
		return nil, nil, err
	}
	if err := settledAt(ctx, cs, ns, takeoverFloors[0], o.syncPeriod, 3*time.Minute); err != nil {
		return nil, nil, fmt.Errorf("before the crash: %w", err)
	}
	f, leader, err := failOver(ctx, cs, c, ns, a, b, syscall.SIGKILL, takeoverFloors[1])
	if err != nil {
		return nil, nil, fmt.Errorf("SIGKILL: %w", err)
	}
	crash = &f

	standby, err := start()
	if err != nil {
		return crash, nil, err
	}
	if err := warm(standby); err != nil {
		return crash, nil, err
	}
	if err := settledAt(ctx, cs, ns, takeoverFloors[1], o.syncPeriod, time.Minute); err != nil {
		return crash, nil, fmt.Errorf("before the graceful stop: %w", err)
	}
	g, _, err := failOver(ctx, cs, c, ns, leader, standby, syscall.SIGTERM, takeoverFloors[2])
	if err != nil {
		return crash, nil, fmt.Errorf("SIGTERM: %w", err)
	}
	return crash, &g, nil
}

// memoryFloor makes the policy control memory only, at least mi MiB, and
// resize every pod at once.
func memoryFloor(mi int64) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
			MinAllowed: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(mi<<20, resource.BinarySI)},
		}}}
		if s.Behavior == nil {
			s.Behavior = &v1alpha1.Behavior{}
		}
		s.Behavior.MaxConcurrentResizes = ptr.To[int32](takeoverPods)
	}
}

// failOver stops the leader of a and b with sig, raises the policy's
// memory floor once the leader's process has exited, so that the first
// resize after can only be the standby's, and times, from the signal, the
// standby taking the lease and its first resize. It returns the standby,
// now leading.
func failOver(ctx context.Context, cs *kubernetes.Clientset, c client.Client, ns string, a, b *managerProcess, sig syscall.Signal, floor int64) (failover, *managerProcess, error) {
	leader, standby, err := leaderOf(a, b)
	if err != nil {
		return failover{}, nil, err
	}
	leases := cs.CoordinationV1().Leases(ns)
	name := shard.Shard{Count: 1, Namespaces: []string{ns}}.LeaseName("tailor-manager")
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return failover{}, nil, fmt.Errorf("the leader's lease: %w", err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" {
		return failover{}, nil, fmt.Errorf("lease %s held by no one while %s leads", name, leader.name)
	}

	killed := time.Now()
	if err := leader.signal(sig, 40*time.Second); err != nil {
		return failover{}, nil, err
	}
	exited := time.Since(killed)
	gens, err := generations(ctx, cs, ns)
	if err != nil {
		return failover{}, nil, err
	}
	if err := setFloor(ctx, c, ns, floor); err != nil {
		return failover{}, nil, fmt.Errorf("raising the memory floor to %dMi: %w", floor, err)
	}
	first, err := firstResize(ctx, cs, ns, gens, floor, time.Minute)
	after, lerr := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if lerr == nil {
			err = fmt.Errorf("%w (the lease held by %q, before by %q)", err, ptr.Deref(after.Spec.HolderIdentity, ""), holder)
		}
		return failover{}, nil, err
	}
	if lerr != nil {
		return failover{}, nil, fmt.Errorf("the lease after the takeover: %w", lerr)
	}
	if next := ptr.Deref(after.Spec.HolderIdentity, ""); next == "" || next == holder || after.Spec.AcquireTime == nil {
		return failover{}, nil, fmt.Errorf("the pods were resized, but the lease is held by %q (before by %q), acquired at %v", next, holder, after.Spec.AcquireTime)
	}
	if leading, _ := standby.leading(); !leading {
		return failover{}, nil, fmt.Errorf("the lease moved from %q, but the standby %s does not lead", holder, standby.name)
	}
	// first is no earlier than the resize, which the new leader made after
	// it took the lease, by the host's one clock.
	if acquired := after.Spec.AcquireTime.Time; first.Before(acquired) {
		return failover{}, nil, fmt.Errorf("a pod was resized %s before the standby took the lease: another manager acts on namespace %s",
			acquired.Sub(first).Round(time.Millisecond), ns)
	}
	return failover{exited: exited, lease: after.Spec.AcquireTime.Sub(killed), resize: first.Sub(killed)}, standby, nil
}

// leaderOf waits until exactly one of a and b leads and returns it first.
func leaderOf(a, b *managerProcess) (leader, standby *managerProcess, err error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		la, _ := a.leading()
		lb, _ := b.leading()
		switch {
		case la && lb:
			return nil, nil, fmt.Errorf("both %s and %s lead", a.name, b.name)
		case la:
			return a, b, nil
		case lb:
			return b, a, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, nil, fmt.Errorf("neither %s nor %s leads after a minute", a.name, b.name)
}

// warm waits until a new standby serves its metrics, then standbyWarm.
func warm(m *managerProcess) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok := m.leading(); ok {
			time.Sleep(standbyWarm)
			return nil
		}
		if !m.alive() || time.Now().After(deadline) {
			return fmt.Errorf("manager %s never served its metrics", m.name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setFloor raises the policy's memory minAllowed to floor MiB.
func setFloor(ctx context.Context, c client.Client, ns string, floor int64) error {
	p := &v1alpha1.TailorPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: takeoverApp}, p); err != nil {
		return err
	}
	orig := p.DeepCopy()
	memoryFloor(floor)(&p.Spec)
	return c.Patch(ctx, p, client.MergeFrom(orig))
}

// generations are the trial's pods' generations, by name.
func generations(ctx context.Context, cs *kubernetes.Clientset, ns string) (map[string]int64, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + takeoverApp})
	if err != nil {
		return nil, err
	}
	gens := make(map[string]int64, len(list.Items))
	for _, p := range list.Items {
		gens[p.Name] = p.Generation
	}
	return gens, nil
}

// atFloor returns the pods' generations when all takeoverPods of them are
// Ready with floor MiB of memory requested, in their spec and as their
// kubelet reports it.
func atFloor(ctx context.Context, cs *kubernetes.Clientset, ns string, floor int64) (map[string]int64, bool, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + takeoverApp})
	if err != nil {
		return nil, false, err
	}
	gens := map[string]int64{}
	for _, p := range list.Items {
		want := floor << 20
		if !podutil.IsPodReady(&p) || p.Status.ObservedGeneration != p.Generation || len(p.Status.ContainerStatuses) == 0 ||
			p.Status.ContainerStatuses[0].Resources == nil || p.Status.ContainerStatuses[0].Resources.Requests.Memory().Value() != want ||
			p.Spec.Containers[0].Resources.Requests.Memory().Value() != want {
			return nil, false, nil
		}
		gens[p.Name] = p.Generation
	}
	return gens, len(gens) == takeoverPods, nil
}

// settledAt waits until the pods are at floor MiB and unchanged for three
// sync periods: the leader has nothing left to do.
func settledAt(ctx context.Context, cs *kubernetes.Clientset, ns string, floor int64, sync, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		before, ok, err := atFloor(ctx, cs, ns, floor)
		if err != nil {
			return err
		}
		if !ok {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		time.Sleep(3 * sync)
		after, ok, err := atFloor(ctx, cs, ns, floor)
		if err != nil {
			return err
		}
		if ok && maps.Equal(before, after) {
			return nil
		}
	}
	return fmt.Errorf("the %d pods not Ready at %dMi of memory, resized and unchanged, within %s", takeoverPods, floor, timeout)
}

// firstResize waits until every pod in gens has floor MiB requested, and
// returns when the first of them was changed past its generation there:
// by the apiserver's clock, in whole seconds in the pod's managedFields,
// so the end of that second, or when this program saw it, if sooner.
func firstResize(ctx context.Context, cs *kubernetes.Clientset, ns string, gens map[string]int64, floor int64, timeout time.Duration) (time.Time, error) {
	var first time.Time
	seen := map[string]bool{}
	deadline := time.Now().Add(timeout)
	for {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + takeoverApp})
		// The list was read before now.
		now := time.Now()
		if err != nil {
			return first, err
		}
		done := 0
		for _, p := range list.Items {
			gen, ok := gens[p.Name]
			if !ok {
				return first, fmt.Errorf("pod %s appeared during the takeover", p.Name)
			}
			if p.Generation <= gen {
				continue
			}
			if !seen[p.Name] {
				seen[p.Name] = true
				server, ok := resizedAt(&p)
				if !ok {
					return first, fmt.Errorf("pod %s changed (generation %d) by another client than tailor", p.Name, p.Generation)
				}
				at := server.Add(time.Second)
				if now.Before(at) {
					at = now
				}
				if first.IsZero() || at.Before(first) {
					first = at
				}
			}
			if p.Spec.Containers[0].Resources.Requests.Memory().Value() == floor<<20 {
				done++
			}
		}
		if done == len(gens) {
			return first, nil
		}
		if now.After(deadline) {
			return first, fmt.Errorf("%d of %d pods at %dMi of memory %s after the floor was raised", done, len(gens), floor, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// resizedAt is when tailor last resized p, by the apiserver's clock (whole
// seconds).
func resizedAt(p *corev1.Pod) (time.Time, bool) {
	for _, mf := range p.ManagedFields {
		if mf.Manager == actuator.FieldManager && mf.Subresource == "resize" && mf.Time != nil {
			return mf.Time.Time, true
		}
	}
	return time.Time{}, false
}

// takeoverBounds bound the medians, in seconds, from the signal to the
// standby holding the lease and to its first resize.
type takeoverBounds struct {
	LeaseMedianMax  float64 `json:"leaseMedianMax"`
	ResizeMedianMax float64 `json:"resizeMedianMax"`
}

// seconds is each failover's f, in seconds.
func seconds(fs []failover, f func(failover) time.Duration) []float64 {
	xs := make([]float64, len(fs))
	for i, x := range fs {
		xs[i] = f(x).Seconds()
	}
	return xs
}

func leaseTime(f failover) time.Duration  { return f.lease }
func resizeTime(f failover) time.Duration { return f.resize }
func exitTime(f failover) time.Duration   { return f.exited }
