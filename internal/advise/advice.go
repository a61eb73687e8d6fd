package advise

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/recommend"
)

// Input is what one pod's advice is asked with.
type Input struct {
	Spec  *v1alpha1.TailorPolicySpec
	Pod   Pod
	Usage metrics.Result
	// Holds are the requests HorizontalPodAutoscalers hold, which the
	// startup boost leaves alone.
	Holds ownership.Holds
	// Template is the target's pod template, nil when there is none: what
	// a boost goes back to before there is a recommendation.
	Template *corev1.PodTemplateSpec
	// FieldManager is the one tailor's resizes are sent under.
	FieldManager string
	Now          time.Time
}

// Advice is what the model says for one pod.
type Advice struct {
	// Targets are the values each container should have, by name; a
	// container with nothing to change has none.
	Targets   map[string]podchange.Target
	PodTarget podchange.Target
	// Early are the containers' targets with the lowerings that only the
	// scale-down stabilization window holds back given (recommend.Advice.Early),
	// by name; a container with none has none. Room made for a pod of
	// higher priority may use them in place of Targets; nothing else does.
	// The pod-level target has none: its lowering waits its window.
	Early map[string]podchange.Target
	// WorkingSet is each container's memory in use, from fresh usage.
	WorkingSet map[string]resource.Quantity
	// JVM is each container's JVM as the node agent measured it, from
	// fresh usage (podchange.Input.JVM).
	JVM map[string]jvm.Measured
	// Recs are the recommendations against this pod's values, by
	// container name (podcontainers.PodLevelName for the pod's own).
	Recs map[string]recommend.Recommendation
	// RaiseSince is when the oldest evidence for a raise was taken; zero
	// when nothing is to be raised.
	RaiseSince time.Time
	// Boost are the containers whose cpu target is a startup boost given
	// or taken back (which podchange.Decide applies directly), BoostRaise
	// those of them given (a resize carrying one is sent under
	// boost.FieldManager), and NotBoosted the containers the
	// boost leaves alone, and why. All nil without a startup boost.
	Boost, BoostRaise map[string]bool
	NotBoosted        []string
}

// Advise asks the workload's states about one pod's current values, then
// applies the startup boost to the cpu targets it decides. It changes only
// the pod's memory (what a boost goes back to).
func (m *Model) Advise(in Input) Advice {
	a := m.recommend(in)
	m.startupBoost(in, &a)
	return a
}

// recommend is the recommenders' targets for one pod.
func (m *Model) recommend(in Input) Advice {
	p, spec, now := in.Pod.Pod, in.Spec, in.Now
	a := Advice{Targets: map[string]podchange.Target{}, Early: map[string]podchange.Target{}, WorkingSet: map[string]resource.Quantity{}, JVM: map[string]jvm.Measured{}, Recs: map[string]recommend.Recommendation{}}
	allFresh := true
	consider := func(name string, cur recommend.Resources, fresh bool, at time.Time) *podchange.Target {
		states := m.statesFor(in.Pod, name)
		if len(states) == 0 {
			return nil
		}
		var rec recommend.Recommendation
		for i, st := range states {
			r := st.Recommend(cur, in.Pod.LastResize, now)
			if i == 0 {
				rec = r
			} else {
				rec = higher(rec, r)
			}
		}
		a.Recs[name] = rec
		t := podchange.Target{}
		// Without fresh usage only a raise is allowed: an OOM-killed
		// container in a crash loop reports no usage and needs memory most;
		// missing data never lowers anything.
		if rec.CPU.Decision == recommend.Raise || (fresh && rec.CPU.Decision == recommend.Lower) {
			t.CPU = resource.NewMilliQuantity(int64(rec.CPU.Target*1000+0.5), resource.DecimalSI)
		}
		if rec.Memory.Decision == recommend.Raise || (fresh && rec.Memory.Decision == recommend.Lower) {
			t.Memory = resource.NewQuantity(int64(rec.Memory.Target), resource.BinarySI)
		}
		// A limit advised apart from the request moves with the request,
		// or alone when the tail outgrows it; a lower limit waits for the
		// request's next change (podchange.Target.MemoryLimit).
		limitRaise := rec.MemoryLimit.Decision == recommend.Raise
		if name != podcontainers.PodLevelName && rec.MemoryLimit.Target > 0 && (t.Memory != nil || limitRaise) {
			t.MemoryLimit = resource.NewQuantity(int64(rec.MemoryLimit.Target), resource.BinarySI)
		}
		// A value outside the policy's bounds (an edit of minAllowed or
		// maxAllowed, a pod created outside them) moves to the bound even
		// when usage alone would hold it; lowering still needs fresh data.
		bounded := false
		if name != podcontainers.PodLevelName {
			if pol, err := spec.PolicyFor(name); err == nil {
				if t.CPU == nil {
					t.CPU = outOfBounds(pol, corev1.ResourceCPU, cur.CPU, fresh)
					bounded = bounded || t.CPU != nil
				}
				if t.Memory == nil {
					t.Memory = outOfBounds(pol, corev1.ResourceMemory, cur.Memory, fresh)
					bounded = bounded || t.Memory != nil
				}
				if t.Memory == nil && fresh && podchange.Controls(pol, corev1.ResourceMemory) && *pol.Mode != v1alpha1.ContainerModeOff {
					t.Memory = outgrown(a.WorkingSet[name], cur.Memory)
					bounded = bounded || t.Memory != nil
				}
			}
		} else if t.Memory == nil && fresh {
			// The pod-level request is sized by the "*" policy, and holds
			// its running containers' working sets (fresh: every one is
			// known), as podchange.Decide reads them.
			if pol, err := spec.PolicyFor(v1alpha1.DefaultContainerName); err == nil && podchange.Controls(pol, corev1.ResourceMemory) &&
				(pol.Mode == nil || *pol.Mode != v1alpha1.ContainerModeOff) {
				var ws resource.Quantity
				for _, c := range podcontainers.Names(p) {
					ws.Add(a.WorkingSet[c])
				}
				t.Memory = outgrown(ws, cur.Memory)
				bounded = bounded || t.Memory != nil
			}
		}
		if rec.CPU.Decision == recommend.Raise || rec.Memory.Decision == recommend.Raise || (limitRaise && t.MemoryLimit != nil) || bounded {
			since := now
			if fresh && at.Before(now) {
				since = at
			}
			for _, st := range states {
				if oom := st.LastOOM(); !oom.IsZero() && oom.Before(since) && oom.After(in.Pod.LastResize) {
					since = oom
				}
			}
			if a.RaiseSince.IsZero() || since.Before(a.RaiseSince) {
				a.RaiseSince = since
			}
		}
		if name != podcontainers.PodLevelName {
			if e, ok := early(t, rec, fresh); ok {
				a.Early[name] = e
			}
		}
		if t.CPU == nil && t.Memory == nil && t.MemoryLimit == nil {
			return nil
		}
		return &t
	}
	for _, c := range podcontainers.Names(p) {
		u, fresh := in.Usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
		if fresh {
			a.WorkingSet[c] = *resource.NewQuantity(int64(u.Memory), resource.BinarySI)
			if u.JVM != nil {
				a.JVM[c] = *u.JVM
			}
		} else {
			allFresh = false
		}
		cur := recommend.Resources{CPU: Requested(p, c, corev1.ResourceCPU), Memory: Requested(p, c, corev1.ResourceMemory),
			MemoryLimit: Limited(p, c, corev1.ResourceMemory)}
		if t := consider(c, cur, fresh, u.Time); t != nil {
			a.Targets[c] = *t
		}
	}
	if pr := p.Spec.Resources; pr != nil {
		cur := recommend.Resources{CPU: amount.In(pr.Requests, corev1.ResourceCPU), Memory: amount.In(pr.Requests, corev1.ResourceMemory)}
		if t := consider(podcontainers.PodLevelName, cur, allFresh, now); t != nil {
			a.PodTarget = *t
		}
	}
	return a
}

// early is t with the lowerings of rec that only the stabilization window
// holds given, and whether there is any. Without fresh usage there is none:
// missing data never lowers anything.
func early(t podchange.Target, rec recommend.Recommendation, fresh bool) (podchange.Target, bool) {
	if !fresh {
		return t, false
	}
	some := false
	if v, ok := rec.CPU.Early(); ok && t.CPU == nil {
		t.CPU, some = resource.NewMilliQuantity(int64(v*1000+0.5), resource.DecimalSI), true
	}
	if v, ok := rec.Memory.Early(); ok && t.Memory == nil {
		t.Memory, some = resource.NewQuantity(int64(v), resource.BinarySI), true
		// The limit advised apart moves with the request, as it does when
		// the window has passed.
		if rec.MemoryLimit.Target > 0 {
			t.MemoryLimit = resource.NewQuantity(int64(rec.MemoryLimit.Target), resource.BinarySI)
		}
	}
	return t, some
}

// statesFor are the states that advise pod p's container name: the
// workload's on p's class of node, and the pod's own when it has one
// (PodMemory.Own).
func (m *Model) statesFor(p Pod, name string) []*recommend.State {
	var out []*recommend.State
	key := Key(name, p.Class)
	if wc, ok := m.Containers[key]; ok {
		out = append(out, wc.State)
	}
	if p.Memory != nil {
		if own, ok := p.Memory.Own[key]; ok {
			out = append(out, own.State)
		}
	}
	return out
}

// higher is, for each resource, the advice of a or b that needs more: a
// pod with a state of its own gets what the workload needs or what it
// needs itself, whichever is more, each with its own stabilization. The
// memory request and limit come from the same state, the one whose limit
// (or, without a limit advised apart, whose request) needs more, so the
// limit still holds the request.
func higher(a, b recommend.Recommendation) recommend.Recommendation {
	more := func(x, y recommend.Advice) bool {
		ny, seen := y.Needed()
		if !seen {
			return false
		}
		nx, seenX := x.Needed()
		return !seenX || ny > nx
	}
	out := a
	if more(a.CPU, b.CPU) {
		out.CPU = b.CPU
	}
	memA, memB := a.Memory, b.Memory
	if a.MemoryLimit.Target > 0 || b.MemoryLimit.Target > 0 {
		memA, memB = a.MemoryLimit, b.MemoryLimit
	}
	if more(memA, memB) {
		out.Memory, out.MemoryLimit = b.Memory, b.MemoryLimit
	}
	return out
}

// startupBoost applies boost.Targets to a pod's advice: the cpu
// targets of the containers the boost decides are its own.
func (m *Model) startupBoost(in Input, a *Advice) {
	spec, p, mem := in.Spec, in.Pod.Pod, in.Pod.Memory
	if spec.StartupBoost == nil {
		return
	}
	d := boost.Targets(boost.Input{
		Pod: p, Spec: spec, Holds: in.Holds, FieldManager: in.FieldManager, Now: in.Now,
		Base: func(name string) (resource.Quantity, bool) {
			if q, ok := boostBase(in.Template, a, name); ok {
				return q, true
			}
			q, ok := mem.BoostFrom[name]
			return q, ok
		},
	})
	a.Boost, a.BoostRaise = map[string]bool{}, map[string]bool{}
	for name, bt := range d.Containers {
		t := a.Targets[name]
		t.CPU = bt.CPU
		if bt.CPU != nil {
			a.Boost[name] = true
		}
		if bt.Raise {
			a.BoostRaise[name] = true
			if _, known := boostBase(in.Template, a, name); !known {
				// Nothing else says what to go back to: remember what it
				// had. A restart forgets it, and the boost then stays
				// until there is a recommendation.
				if mem.BoostFrom == nil {
					mem.BoostFrom = map[string]resource.Quantity{}
				}
				if _, had := mem.BoostFrom[name]; !had {
					mem.BoostFrom[name] = podcontainers.Named(p, name).Resources.Requests[corev1.ResourceCPU]
				}
			}
		}
		if t.CPU == nil && t.Memory == nil {
			delete(a.Targets, name)
		} else {
			a.Targets[name] = t
		}
		if e, ok := a.Early[name]; ok {
			// A boost decides the cpu target: no window to cut short.
			e.CPU = bt.CPU
			a.Early[name] = e
		}
	}
	for name := range mem.BoostFrom {
		if _, decided := d.Containers[name]; !decided {
			delete(mem.BoostFrom, name)
		}
	}
	a.NotBoosted = d.NotBoosted
}

// boostBase is the CPU request a container would have without a boost: the
// workload's recommendation, or its template's request before there is one.
func boostBase(template *corev1.PodTemplateSpec, a *Advice, name string) (resource.Quantity, bool) {
	if rec, ok := a.Recs[name]; ok {
		if needed, seen := rec.CPU.Needed(); seen && needed > 0 {
			return *resource.NewMilliQuantity(int64(needed*1000+0.5), resource.DecimalSI), true
		}
	}
	if template != nil {
		tp := &corev1.Pod{Spec: template.Spec}
		if c := podcontainers.Named(tp, name); c != nil {
			if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
				return q, true
			}
		}
	}
	return resource.Quantity{}, false
}

// outgrown is the target of a memory request below what its container
// holds now (ws), or nil. The recommender may hold such a request: its
// peaks, learnt while the workload's pods were still filling their memory,
// can sit just under what they hold once full. It is raised all the same,
// since the kubelet evicts first, under node pressure, the pods using more
// than they requested. The working set is the target; the decision keeps
// its floor above it.
func outgrown(ws resource.Quantity, cur float64) *resource.Quantity {
	if cur <= 0 || amount.Of(corev1.ResourceMemory, ws) <= cur {
		return nil
	}
	return ptr.To(ws.DeepCopy())
}

// outOfBounds is the bound of pol that cur (cores or bytes, the request)
// breaks, nil when it is within them or not requested at all. A value above
// maxAllowed moves down only on fresh usage, as any lowering does.
func outOfBounds(pol v1alpha1.ContainerPolicy, r corev1.ResourceName, cur float64, fresh bool) *resource.Quantity {
	if cur <= 0 {
		return nil
	}
	if lo, ok := pol.MinAllowed[r]; ok && cur < amount.Of(r, lo) {
		return ptr.To(lo.DeepCopy())
	}
	if hi, ok := pol.MaxAllowed[r]; ok && fresh && cur > amount.Of(r, hi) {
		return ptr.To(hi.DeepCopy())
	}
	return nil
}
