package podchange

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// Target is what the recommender wants for one container: the value its
// usage must fit under (peaks plus margin). It sizes the request, as
// VerticalPodAutoscaler's target does; under RequestsAndLimits the limit
// keeps its ratio to the request. Bounds (minAllowed, maxAllowed) apply to
// it. Nil holds that resource as it is.
type Target struct {
	CPU    *resource.Quantity
	Memory *resource.Quantity
	// MemoryLimit is the memory limit the recommender advises apart from
	// the request (recommend.Config.MemorySplit): the request is sized
	// from the typical peak, which the scheduler reserves, the limit from
	// the tail, where the kernel kills. Under RequestsAndLimits a memory
	// limit is then the higher of this and the request at the workload's
	// ratio (Input.LimitRatio), and a Guaranteed pod's one value is the
	// higher of the two targets. Nil: the limit follows the request at
	// the pod's ratio. Set without Memory, it raises the limit alone.
	MemoryLimit *resource.Quantity
}

func (t Target) of(r corev1.ResourceName) *resource.Quantity {
	if r == corev1.ResourceCPU {
		return t.CPU
	}
	return t.Memory
}

// Without is t with its target for r dropped: what a pod is sized to while
// its change of r is held.
func (t Target) Without(r corev1.ResourceName) Target {
	if r == corev1.ResourceCPU {
		t.CPU = nil
	} else {
		// A memory change held is held whole: its limit with it.
		t.Memory, t.MemoryLimit = nil, nil
	}
	return t
}

// Input is everything Decide needs about one pod; the controller gathers it.
type Input struct {
	Pod  *corev1.Pod
	Spec *v1alpha1.TailorPolicySpec
	// Targets by container name.
	Targets map[string]Target
	// PodTarget sizes the pod-level spec.resources of a pod that has them:
	// the target for the pod's containers taken together.
	PodTarget Target
	// WorkingSet is each container's current memory working set; a container
	// missing here has no memory floor known, so its memory is never lowered.
	WorkingSet map[string]resource.Quantity
	// JVM is each container's JVM as the node agent measured it (agent
	// --jvm), by container name; a container missing here is judged by its
	// spec alone.
	JVM map[string]jvm.Measured
	// MemoryFloorHeadroom is the share above the working set a memory limit
	// must keep (0.1 = 10%).
	MemoryFloorHeadroom float64
	// Room is how much more of each resource the pod's requests may grow on
	// its node now (resize.Room). Raises are cut to fit it, in container name
	// order, so tailor asks for what the kubelet can admit at once instead of
	// a resize that waits Deferred or is refused. Nil: unknown, no cut.
	Room corev1.ResourceList
	// LastResize is when tailor last resized this pod (zero: never).
	LastResize time.Time
	Now        time.Time
	// Holds are the requests a HorizontalPodAutoscaler divides usage by:
	// they stay, and only their limits are sized.
	Holds ownership.Holds
	// Boost names the containers whose cpu target is a startup boost being
	// applied or removed: it goes straight to its value, with no step
	// limits or tolerance.
	Boost map[string]bool
	// Creating sizes a pod that does not run yet, at admission: it goes
	// straight to its target (no step limits, no tolerance), has no
	// working set to keep memory above, and restarts nothing.
	Creating bool
	// Rules are the namespace's LimitRanges and ResourceQuotas: each value
	// is clamped into the LimitRanges' container min, max and
	// maxLimitRequestRatio, as the apiserver judges a new pod and a resize
	// alike. Nil: none.
	Rules *nsrules.Rules
	// LimitRatio is each container's memory limit over its request in the
	// workload's template (MemoryLimitRatios), which a limit advised apart
	// from the request keeps at least. The pod's own ratio will not do:
	// once an advised limit is applied it is tailor's, and scaling the
	// next request by it would carry the limit further from the advice
	// at every resize. A container missing here (no template is known:
	// a selector policy, a bare pod) gets the advised limit, never under
	// its request. A pod being created is its template: its own ratio is
	// used.
	LimitRatio map[string]float64
}

// Skip explains a change Decide chose not to make.
type Skip struct {
	Container string
	Resource  corev1.ResourceName
	Reason    SkipReason
	Message   string
}

// SkipReason is a stable name for why a change was skipped; events and
// status conditions carry it.
type SkipReason string

const (
	SkipPolicyOff         SkipReason = "PolicyOff"
	SkipContainerModeOff  SkipReason = "ContainerModeOff"
	SkipBestEffort        SkipReason = "BestEffortPod"
	SkipNotRequested      SkipReason = "NotRequested"
	SkipRestartNotAllowed SkipReason = "RestartNotAllowed"
	SkipWithinTolerance   SkipReason = "WithinTolerance"
	SkipNoWorkingSet      SkipReason = "NoWorkingSet"
	SkipTooSoon           SkipReason = "MinResizeInterval"
	// SkipNoRoom: a raise the node has no room for at all right now.
	SkipNoRoom SkipReason = "NodeFull"
	// SkipQoSChange: the change would move the pod to another QoS class,
	// which Kubernetes refuses.
	SkipQoSChange SkipReason = "QoSClassChange"
	// SkipPodLevelLimit: a container's raise the pod-level limit, which
	// the policy does not control, cannot hold.
	SkipPodLevelLimit SkipReason = "PodLevelLimit"
	// SkipHPA: the request is held for a HorizontalPodAutoscaler and there
	// is no limit tailor may size instead.
	SkipHPA SkipReason = "HPAUtilization"
)

// Change is one resource of one container, before and after.
type Change struct {
	Container                 string
	Resource                  corev1.ResourceName
	RequestBefore, RequestNow resource.Quantity
	// LimitBefore/LimitNow are nil when the container has no limit.
	LimitBefore, LimitNow *resource.Quantity
	// Notes say which rule shaped the value (bounds, step, floor).
	Notes []string
	// RequestHeld: the request stays for a HorizontalPodAutoscaler; only
	// the limit moves.
	RequestHeld bool
}

// Decision is what to ask Kubernetes for, and what was held back and why.
type Decision struct {
	Desired resize.Desired
	Changes []Change
	// PodChanges are the changes to pod-level resources; Container is
	// podcontainers.PodLevelName.
	PodChanges []Change
	Skips      []Skip
	// RetryAfter is set when the pod was resized too recently.
	RetryAfter time.Duration
	// Short lists the raises the node's room cut, partly (in Changes) or
	// wholly (in Skips as NodeFull): what in place cannot give now.
	Short []Shortfall
	// RoomLeft is Input.Room less what the raises in Changes take.
	RoomLeft corev1.ResourceList
}

// Shortfall is a raise the node cannot give in full now.
type Shortfall struct {
	Container string
	Resource  corev1.ResourceName
	// Wanted is the request the recommendation asked for; Got what fits.
	Wanted, Got resource.Quantity
	// Room is what was free for this raise.
	Room resource.Quantity
}

// Empty reports whether there is nothing to send.
func (d Decision) Empty() bool { return len(d.Changes) == 0 && len(d.PodChanges) == 0 }

// All is every change, the containers' then the pod's.
func (d Decision) All() []Change { return append(append([]Change(nil), d.Changes...), d.PodChanges...) }

// Raises reports whether any change raises a request or a limit.
func (d Decision) Raises() bool {
	for _, c := range d.All() {
		if c.RequestNow.Cmp(c.RequestBefore) > 0 || (c.LimitNow != nil && c.LimitBefore != nil && c.LimitNow.Cmp(*c.LimitBefore) > 0) {
			return true
		}
	}
	return false
}

// Defaults for behaviour a policy leaves unset.
const (
	DefaultMinResizeInterval = time.Minute
	// DefaultTolerance ignores changes under 5%: not worth a resize.
	DefaultTolerance = 0.05
)

// MinResizeInterval is the policy's minResizeInterval, or the default.
func MinResizeInterval(spec *v1alpha1.TailorPolicySpec) time.Duration {
	if b := spec.Behavior; b != nil && b.MinResizeInterval != nil {
		return b.MinResizeInterval.Duration
	}
	return DefaultMinResizeInterval
}

// wantsChange says whether the recommender asks for any change of the pod.
func (in Input) wantsChange() bool {
	for _, t := range in.Targets {
		if t.CPU != nil || t.Memory != nil {
			return true
		}
	}
	return in.PodTarget.CPU != nil || in.PodTarget.Memory != nil
}

// Decide turns recommendations into a resize for one pod, keeping every rule
// tailor promises: the QoS class stays, no restart the policy does not allow,
// no limit added, memory never set below the working set plus headroom,
// bounds and step limits respected. What it returns is still checked by the
// resize planner.
func Decide(in Input) (Decision, error) {
	var d Decision
	if in.Pod == nil || in.Spec == nil {
		return d, fmt.Errorf("decide: pod and policy are required")
	}
	if in.Spec.Mode() == v1alpha1.UpdateModeOff {
		d.Skips = append(d.Skips, Skip{Reason: SkipPolicyOff, Message: "updateMode is Off: recommendations only"})
		return d, nil
	}
	// A pod resized lately waits for minResizeInterval only when there
	// is something to change: one the recommender holds does not bring
	// its policy back when the interval ends (at 1,000 pods a policy was
	// synced again at every pod's expiry, most of them for nothing).
	if !in.LastResize.IsZero() && in.wantsChange() {
		interval := MinResizeInterval(in.Spec)
		if wait := in.LastResize.Add(interval).Sub(in.Now); wait > 0 {
			d.RetryAfter = wait
			d.Skips = append(d.Skips, Skip{Reason: SkipTooSoon, Message: fmt.Sprintf("resized %s ago; minResizeInterval is %s", in.Now.Sub(in.LastResize).Round(time.Second), interval)})
			return d, nil
		}
	}
	qos := qosutil.GetPodQOS(in.Pod)
	if qos == corev1.PodQOSBestEffort {
		d.Skips = append(d.Skips, Skip{Reason: SkipBestEffort, Message: "a BestEffort pod cannot be resized: it has no requests or limits"})
		return d, nil
	}

	var room corev1.ResourceList
	if in.Room != nil {
		room = in.Room.DeepCopy()
	}
	podLevel := HasPodLevel(in.Pod)
	names := make([]string, 0, len(in.Targets))
	for n := range in.Targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := podcontainers.Named(in.Pod, name)
		if c == nil {
			return d, fmt.Errorf("decide: pod %s/%s has no running container %q", in.Pod.Namespace, in.Pod.Name, name)
		}
		pol, err := in.Spec.PolicyFor(name)
		if err != nil {
			return d, fmt.Errorf("decide: %w", err)
		}
		if pol.Mode != nil && *pol.Mode == v1alpha1.ContainerModeOff {
			d.Skips = append(d.Skips, Skip{Container: name, Reason: SkipContainerModeOff, Message: "containerPolicy mode is Off"})
			continue
		}
		for _, r := range pol.ControlledResources {
			t := in.Targets[name].of(r)
			if t == nil && r == corev1.ResourceMemory && in.Targets[name].MemoryLimit != nil {
				if req, ok := c.Resources.Requests[r]; ok {
					t = &req
				}
			}
			if t == nil {
				continue
			}
			ch, skip := in.decideResource(c, pol, r, *t)
			if skip != nil && skip.Reason == SkipNotRequested && podLevelHas(in.Pod, r) {
				// The pod-level request sizes it: nothing is held back.
				continue
			}
			// A pod with pod-level resources is placed by its pod-level
			// requests: what its containers ask for inside them takes no
			// room on the node.
			if ch != nil && room != nil && !podLevelHas(in.Pod, r) {
				var short *Shortfall
				ch, skip, short = in.fit(ch, r, qos, room)
				if short != nil {
					d.Short = append(d.Short, *short)
				}
			}
			if skip != nil {
				d.Skips = append(d.Skips, *skip)
				continue
			}
			if ch != nil {
				d.Changes = append(d.Changes, *ch)
			}
		}
	}
	// With pod-level resources the pod's QoS class is theirs alone, kept
	// by decidePodLevel; else it is the containers'.
	if podLevel {
		in.decidePodLevel(&d, room)
	} else {
		in.keepQoS(&d, qos)
	}
	d.Desired = DesiredOf(in.Pod, d.Changes, d.PodChanges)
	d.RoomLeft = room
	return d, nil
}

// DesiredOf collects pod's container changes, and the changes of its
// pod-level resources (applied over what it has), into what the planner
// takes.
func DesiredOf(pod *corev1.Pod, changes, podChanges []Change) resize.Desired {
	var out resize.Desired
	if len(podChanges) > 0 {
		pr := pod.Spec.Resources.DeepCopy()
		for _, ch := range podChanges {
			pr.Requests[ch.Resource] = ch.RequestNow
			if ch.LimitNow != nil {
				pr.Limits[ch.Resource] = *ch.LimitNow
			}
		}
		out.Pod = pr
	}
	for _, ch := range changes {
		if out.Containers == nil {
			out.Containers = map[string]corev1.ResourceRequirements{}
		}
		want := out.Containers[ch.Container]
		if want.Requests == nil {
			want.Requests = corev1.ResourceList{}
		}
		want.Requests[ch.Resource] = ch.RequestNow
		if ch.LimitNow != nil {
			if want.Limits == nil {
				want.Limits = corev1.ResourceList{}
			}
			want.Limits[ch.Resource] = *ch.LimitNow
		}
		out.Containers[ch.Container] = want
	}
	return out
}

// keepQoS makes sure the changes leave the pod in its QoS class. A Burstable
// pod whose requests would all reach their limits would become Guaranteed,
// which Kubernetes refuses: each request that reached its limit stops just
// below it, as far as the apiserver's resolution allows, unless just below is
// under minAllowed: then that change is not made (QoSClassChange says why).
// A change that would make a Guaranteed pod Burstable (a request moved
// without its limit) is dropped.
func (in Input) keepQoS(d *Decision, before corev1.PodQOSClass) {
	if len(d.Changes) == 0 && len(d.PodChanges) == 0 {
		return
	}
	if in.after(d) == before {
		return
	}
	if before == corev1.PodQOSBurstable {
		adjust := func(ch *Change) {
			if ch.LimitNow == nil || ch.RequestNow.Cmp(*ch.LimitNow) < 0 {
				return
			}
			if ch.RequestHeld {
				// The request may not move: the limit stays just above.
				q := justAbove(ch.Resource, ch.RequestNow)
				ch.LimitNow = &q
				ch.Notes = append(ch.Notes, "limit kept just above the held request: at the request the pod would become Guaranteed")
				return
			}
			ch.RequestNow = justBelow(ch.Resource, *ch.LimitNow)
			ch.Notes = append(ch.Notes, fmt.Sprintf("request kept just below the %s limit: at the limit the pod would become Guaranteed", ch.LimitNow.String()))
		}
		// A request just below its limit that would be under minAllowed
		// is kept there only if the others do not keep the class.
		underMin := func(ch *Change) bool {
			pol, err := in.Spec.PolicyFor(ch.Container)
			lo, ok := pol.MinAllowed[ch.Resource]
			if err != nil || !ok || ch.RequestHeld || ch.LimitNow == nil || ch.RequestNow.Cmp(*ch.LimitNow) < 0 {
				return false
			}
			below := justBelow(ch.Resource, *ch.LimitNow)
			return below.Cmp(lo) < 0
		}
		for i := range d.Changes {
			if !underMin(&d.Changes[i]) {
				adjust(&d.Changes[i])
			}
		}
		for i := range d.PodChanges {
			adjust(&d.PodChanges[i])
		}
		if in.after(d) == before {
			return
		}
		// What is left would need a request below minAllowed to keep the
		// class: both are promises, so the change is not made (a limit
		// raised instead could break the LimitRange's ratio or maxAllowed
		// that put it there).
		var kept []Change
		for _, ch := range d.Changes {
			if !underMin(&ch) {
				kept = append(kept, ch)
				continue
			}
			pol, _ := in.Spec.PolicyFor(ch.Container)
			lo := pol.MinAllowed[ch.Resource]
			d.Skips = append(d.Skips, Skip{Container: ch.Container, Resource: ch.Resource, Reason: SkipQoSChange,
				Message: fmt.Sprintf("%s request %s -> %s would make the pod Guaranteed at its %s limit, and just below the limit is under minAllowed %s", ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String(), ch.LimitNow.String(), lo.String())})
		}
		d.Changes = kept
		if in.after(d) == before {
			return
		}
	}
	// A Guaranteed pod stays Guaranteed only with every request equal to
	// its limit: a change that breaks that is dropped, and if the class
	// still moves, every change is.
	drop := func(changes []Change, all bool) []Change {
		var kept []Change
		for _, ch := range changes {
			if !all && ch.LimitNow != nil && ch.RequestNow.Cmp(*ch.LimitNow) == 0 {
				kept = append(kept, ch)
				continue
			}
			d.Skips = append(d.Skips, Skip{Container: ch.Container, Resource: ch.Resource, Reason: SkipQoSChange,
				Message: fmt.Sprintf("%s request %s -> %s would change the pod's QoS class from %s; with controlledValues RequestsAndLimits requests and limits move together", ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String(), before)})
		}
		return kept
	}
	d.Changes, d.PodChanges = drop(d.Changes, false), drop(d.PodChanges, false)
	if in.after(d) != before {
		d.Changes, d.PodChanges = drop(d.Changes, true), drop(d.PodChanges, true)
	}
}

// after is the QoS class the pod would have with d applied.
func (in Input) after(d *Decision) corev1.PodQOSClass {
	p := in.Pod.DeepCopy()
	for _, ch := range d.Changes {
		c := podcontainers.Named(p, ch.Container)
		c.Resources.Requests[ch.Resource] = ch.RequestNow
		if ch.LimitNow != nil {
			c.Resources.Limits[ch.Resource] = *ch.LimitNow
		}
	}
	for _, ch := range d.PodChanges {
		p.Spec.Resources.Requests[ch.Resource] = ch.RequestNow
		if ch.LimitNow != nil {
			p.Spec.Resources.Limits[ch.Resource] = *ch.LimitNow
		}
	}
	return qosutil.ComputePodQOS(p)
}

// justAbove is the smallest value of the resource's resolution above v: a
// millicore for cpu, a MiB for memory.
func justAbove(r corev1.ResourceName, v resource.Quantity) resource.Quantity {
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v.MilliValue()+1, resource.DecimalSI)
	}
	const mi = 1 << 20
	return *resource.NewQuantity((v.Value()/mi+1)*mi, resource.BinarySI)
}

// justBelow is the largest value of the resource's resolution under limit:
// a millicore for cpu, a MiB for memory (a byte when the limit is smaller).
func justBelow(r corev1.ResourceName, limit resource.Quantity) resource.Quantity {
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(limit.MilliValue()-1, resource.DecimalSI)
	}
	const mi = 1 << 20
	v := limit.Value()
	if v > mi {
		return *resource.NewQuantity((v-1)/mi*mi, resource.BinarySI)
	}
	return *resource.NewQuantity(v-1, resource.BinarySI)
}

// decideResource shapes one resource's new request and limit, or says why
// not. The target sizes the request, as VerticalPodAutoscaler's does: the
// request is what the scheduler reserves, so it must hold what the container
// uses at its peak. Under RequestsAndLimits the limit keeps the ratio to the
// request the workload had; under RequestsOnly (and for a container without a
// limit) the limit stays as it is. A limit the container does not have is
// never added.
func (in Input) decideResource(c *corev1.Container, pol v1alpha1.ContainerPolicy, r corev1.ResourceName, target resource.Quantity) (*Change, *Skip) {
	skip := func(reason SkipReason, format string, args ...any) *Skip {
		return &Skip{Container: c.Name, Resource: r, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	req, hasReq := c.Resources.Requests[r]
	if !hasReq {
		// Adding a request can change the QoS class and is a decision about
		// the workload's shape, not its size: tailor only resizes.
		return nil, skip(SkipNotRequested, "container declares no %s request", r)
	}
	var lim *resource.Quantity
	if l, ok := c.Resources.Limits[r]; ok {
		lim = &l
	}
	ch := &Change{Container: c.Name, Resource: r, RequestBefore: req, LimitBefore: lim}
	direct := in.Creating || (r == corev1.ResourceCPU && in.Boost[c.Name])
	advised := in.advisedLimit(c, pol, r, lim)
	if advised != nil && lim != nil && lim.Cmp(req) == 0 && qosutil.GetPodQOS(in.Pod) == corev1.PodQOSGuaranteed {
		// A Guaranteed pod's requests must stay its limits (a resize
		// cannot change the QoS class): its one value is where the kernel
		// kills, so it is sized as a limit is.
		if target.Cmp(*advised) < 0 {
			target = *advised
		}
		advised = nil
	}
	v := in.shape(r, toFloat(r, req), toFloat(r, target), pol.MinAllowed, pol.MaxAllowed, direct, &ch.Notes)
	floorOnly := false
	if v == nil {
		switch {
		case in.belowWorkingSet(r, c.Name, req):
			// The request holds by the tolerance, yet the container
			// holds more than it: apply raises it to the floor.
			floorOnly = true
		case in.limitOutgrown(r, lim, advised):
			// The request holds, but the tail has outgrown the limit:
			// the limit is raised alone.
		default:
			return nil, in.withinTolerance(c.Name, r, toFloat(r, req), toFloat(r, target), pol)
		}
		cur := toFloat(r, req)
		v = &cur
	}
	newReq, newLim := in.apply(r, *v, toFloat(r, req), lim, controlsLimits(pol), in.WorkingSet, c.Name, bound(r, pol.MaxAllowed), &ch.Notes)
	if newReq < 0 {
		return nil, skip(SkipNoWorkingSet, "memory not lowered: the container's working set is unknown")
	}
	if advised != nil {
		newLim = in.splitLimit(c, newReq, toFloat(r, *lim), *advised, &ch.Notes)
		if floorOnly {
			// A raise the floor alone asks for lowers nothing: a lower
			// limit waits for the request's next change, as it would have.
			newLim = max(newLim, toFloat(r, *lim))
		}
	}
	if in.Holds.Holds(c.Name, r) {
		if lim == nil || !controlsLimits(pol) {
			return nil, skip(SkipHPA, "%s request kept for the HorizontalPodAutoscaler, which scales on its utilization, and no %s limit to size instead", r, r)
		}
		// The limit follows the recommendation as it would have, but
		// never below the request it must stay above.
		newReq, newLim = toFloat(r, req), max(newLim, toFloat(r, req))
		ch.RequestHeld = true
		ch.Notes = append(ch.Notes, "request kept for the HorizontalPodAutoscaler: only the limit is sized")
	}
	ch.RequestNow = keptOr(r, newReq, req)
	if lim != nil {
		q := keptOr(r, newLim, *lim)
		ch.LimitNow = &q
		if ch.RequestNow.Cmp(q) > 0 {
			// Rounding up to whole MiB may pass a limit that is not.
			ch.RequestNow = q.DeepCopy()
		}
	}
	if r == corev1.ResourceMemory {
		var measured *jvm.Measured
		if m, ok := in.JVM[c.Name]; ok {
			measured = &m
		}
		keepHeapReach(c, ch, measured)
	}
	in.clamp(ch, pol, lim == nil || !controlsLimits(pol))
	if ch.RequestNow.Cmp(req) == 0 && (lim == nil || ch.LimitNow.Cmp(*lim) == 0) {
		return nil, nil
	}
	if !in.Creating && RestartsFor(c, r) && (pol.AllowRestart == nil || !*pol.AllowRestart) {
		return nil, skip(SkipRestartNotAllowed, "%s resizePolicy is RestartContainer and the policy does not allow restarts", r)
	}
	return ch, nil
}

// keepHeapReach stops a lowering of a JVM's memory limit where its heap
// could no longer fill: its working set may be small today, and the heap
// grows to its maximum when the load comes, whatever the limit. The reach
// is the one measured by the node agent where it read the JVM (the heap's
// maximum as the JVM sized it, the non-heap as it is: jvm.MeasuredReach),
// else the spec's estimate (jvm.Reach of -Xmx). Without a measurement,
// where the JVM sized its heap from the limit it saw at start, which the
// spec no longer tells, or its options come from an object the spec does
// not hold, the limit is not lowered at all. It never raises a limit:
// what a JVM cannot use is not given to it, and a measurement, which the
// container itself writes, can only keep its own limit where it is. A
// Guaranteed pod's request stays its limit.
func keepHeapReach(c *corev1.Container, ch *Change, measured *jvm.Measured) {
	if ch.LimitBefore == nil || ch.LimitNow == nil || ch.LimitNow.Cmp(*ch.LimitBefore) >= 0 {
		return
	}
	h := jvm.HeapOf(c)
	if !h.JVM && measured == nil {
		return
	}
	floor := ch.LimitBefore.DeepCopy()
	var note string
	if reach, _, how, known := jvm.ReachOf(h, measured); known {
		if reach.Cmp(floor) < 0 {
			floor = reach
		}
		note = fmt.Sprintf("limit kept at the JVM's reach %s (%s)", floor.String(), how)
	} else if h.Unknown != "" {
		note = fmt.Sprintf("limit not lowered: the JVM's options come from %s, which the pod's spec does not hold", h.Unknown)
	} else {
		how := h.Option
		if how == "" {
			how = "its default MaxRAMPercentage of 25%"
		}
		note = fmt.Sprintf("limit not lowered: the JVM sized its heap from the limit it saw at start (%s), and lowering it in place does not shrink the heap", how)
	}
	if ch.LimitNow.Cmp(floor) >= 0 {
		return
	}
	guaranteed := ch.RequestBefore.Cmp(*ch.LimitBefore) == 0 && ch.RequestNow.Cmp(*ch.LimitNow) == 0
	ch.LimitNow = &floor
	if guaranteed {
		ch.RequestNow = floor.DeepCopy()
	}
	ch.Notes = append(ch.Notes, note)
}

// belowWorkingSet reports whether memory request req of container name is
// below what the container holds now. Such a request is raised to the
// working-set floor however close the target is: the kubelet evicts first,
// under node pressure, the pods using more than they requested.
func (in Input) belowWorkingSet(r corev1.ResourceName, name string, req resource.Quantity) bool {
	if r != corev1.ResourceMemory || in.Creating {
		return false
	}
	w, known := in.WorkingSet[name]
	return known && w.Cmp(req) > 0
}

// advisedLimit is the memory limit the recommender advises for c, within
// what the policy's maxAllowed allows a limit at the workload's ratio, or
// nil where it does not apply: another resource, no advice, a limit the
// container does not have (none is added) or the policy does not move
// (RequestsOnly).
func (in Input) advisedLimit(c *corev1.Container, pol v1alpha1.ContainerPolicy, r corev1.ResourceName, lim *resource.Quantity) *resource.Quantity {
	adv := in.Targets[c.Name].MemoryLimit
	if r != corev1.ResourceMemory || adv == nil || lim == nil || !controlsLimits(pol) {
		return nil
	}
	out := adv.DeepCopy()
	if hi, ok := pol.MaxAllowed[r]; ok {
		// maxAllowed bounds the request; a limit may be that much at the
		// workload's ratio, and no more for the advice's sake.
		most := fromFloat(r, toFloat(r, hi)*max(in.ratio(c.Name, c), 1))
		if out.Cmp(most) > 0 {
			out = most
		}
	}
	return &out
}

// ratio is the memory limit over the request container c keeps under an
// advised limit: its template's, or its own while being created (it is
// its template); 0 when unknown.
func (in Input) ratio(name string, c *corev1.Container) float64 {
	if in.Creating {
		ratio, _ := memoryLimitRatio(c)
		return ratio
	}
	return in.LimitRatio[name]
}

// memoryLimitRatio is c's memory limit over its memory request, and
// whether it has both.
func memoryLimitRatio(c *corev1.Container) (float64, bool) {
	req, okReq := c.Resources.Requests[corev1.ResourceMemory]
	lim, okLim := c.Resources.Limits[corev1.ResourceMemory]
	if !okReq || !okLim || req.Sign() <= 0 {
		return 0, false
	}
	return toFloat(corev1.ResourceMemory, lim) / toFloat(corev1.ResourceMemory, req), true
}

// limitOutgrown reports whether an advised limit is above the current one
// by more than the tolerance for raises: the one change of the limit made
// while the request holds. A lower advice waits for the request's next
// change, so a limit is not resized on its own for a lowering.
func (in Input) limitOutgrown(r corev1.ResourceName, lim, advised *resource.Quantity) bool {
	if advised == nil || lim == nil {
		return false
	}
	cur, want := toFloat(r, *lim), toFloat(r, *advised)
	tolerance := in.tolerance(true)
	return cur > 0 && want > cur*(1+tolerance)
}

// splitLimit is the memory limit of container c, whose limit is was, at
// the new request req when the recommender advises the limit apart: the
// higher of the advice and the request at the workload's ratio, never
// below the request. A limit is where the kernel kills, so it is lowered
// only as far as the working set plus headroom allows, and not at all
// where the working set is unknown (or while being created: no usage).
func (in Input) splitLimit(c *corev1.Container, req, was float64, advised resource.Quantity, notes *[]string) float64 {
	atRatio := req * in.ratio(c.Name, c)
	out := max(toFloat(corev1.ResourceMemory, advised), atRatio, req)
	if out < was && !in.Creating {
		floor := was
		if w, known := in.WorkingSet[c.Name]; known {
			floor = min(was, toFloat(corev1.ResourceMemory, w)*(1+in.MemoryFloorHeadroom))
		}
		out = max(out, floor)
	}
	if out > atRatio {
		*notes = append(*notes, "limit sized apart from the request, from the tail of usage: "+advised.String())
	}
	return out
}

// MemoryLimitRatios is each container's memory limit over its request in
// template t, for Input.LimitRatio; nil without a template.
func MemoryLimitRatios(t *corev1.PodTemplateSpec) map[string]float64 {
	if t == nil {
		return nil
	}
	out := map[string]float64{}
	for _, c := range append(append([]corev1.Container(nil), t.Spec.InitContainers...), t.Spec.Containers...) {
		if ratio, ok := memoryLimitRatio(&c); ok {
			out[c.Name] = ratio
		}
	}
	return out
}

// clamp brings a change into the namespace's LimitRanges, which the
// apiserver applies to a new pod and to a resize alike, and notes which one
// capped it. It never adds a limit the container does not have (a pod
// admitted under a LimitRange max already has its default), and never moves
// a request held for an HPA; what it cannot bring in is left to the check of
// the whole pod (DecidePolicy, Admit), which holds it. Nor does it take a
// request beyond the policy's own bounds: a LimitRange min above
// maxAllowed (or max below minAllowed) leaves no size both allow, and the
// policy's word is kept; the check of the whole pod holds the change.
// Memory of a running container is not taken below what it had where its
// working set is unknown or needs more (belowMemoryFloor), as no lowering
// is.
func (in Input) clamp(ch *Change, pol v1alpha1.ContainerPolicy, limitFixed bool) {
	if in.Rules == nil {
		return
	}
	b := in.Rules.ContainerBounds(ch.Resource)
	req, lim, why := b.Clamp(ch.RequestNow, ch.LimitNow)
	if why == "" || (ch.LimitNow == nil && lim != nil) {
		return
	}
	if limitFixed && ch.LimitNow != nil && lim.Cmp(*ch.LimitNow) != 0 {
		// The policy does not move this limit (RequestsOnly): where the
		// ratio binds, the request comes up to it instead.
		lim = ch.LimitNow
		if r := b.MaxLimitRequestRatio; r != nil && r.Quantity.Sign() > 0 {
			need := fromFloat(ch.Resource, toFloat(ch.Resource, *lim)/r.Quantity.AsApproximateFloat64())
			if need.Cmp(req) > 0 && need.Cmp(*lim) <= 0 {
				req = need
				why = fmt.Sprintf("request raised to its limit over the maxLimitRequestRatio %s of LimitRange %s", r.Quantity.String(), r.LimitRange)
			}
		}
		if req.Cmp(*lim) > 0 {
			req = lim.DeepCopy()
		}
	}
	if ch.RequestHeld {
		if lim != nil && lim.Cmp(ch.RequestNow) < 0 {
			return
		}
		req = ch.RequestNow
	}
	if req.Cmp(ch.RequestNow) == 0 && (lim == nil || lim.Cmp(*ch.LimitNow) == 0) {
		return
	}
	if hi, ok := pol.MaxAllowed[ch.Resource]; ok && req.Cmp(hi) > 0 && req.Cmp(ch.RequestBefore) > 0 {
		return
	}
	if lo, ok := pol.MinAllowed[ch.Resource]; ok && req.Cmp(lo) < 0 && req.Cmp(ch.RequestBefore) < 0 {
		return
	}
	if in.belowMemoryFloor(ch, req, lim) {
		return
	}
	ch.RequestNow, ch.LimitNow = req, lim
	ch.Notes = append(ch.Notes, why)
}

// belowMemoryFloor reports whether a clamp to req and lim would lower the
// memory of a running container below what it had, where its working set is
// unknown or more than the value plus MemoryFloorHeadroom: a LimitRange's
// maxLimitRequestRatio or max met by lowering a limit must not take memory
// the container uses.
func (in Input) belowMemoryFloor(ch *Change, req resource.Quantity, lim *resource.Quantity) bool {
	if ch.Resource != corev1.ResourceMemory || in.Creating {
		return false
	}
	ws, known := in.WorkingSet[ch.Container]
	floor := toFloat(corev1.ResourceMemory, ws) * (1 + in.MemoryFloorHeadroom)
	below := func(v resource.Quantity, before *resource.Quantity) bool {
		return before != nil && v.Cmp(*before) < 0 && (!known || toFloat(corev1.ResourceMemory, v) < floor)
	}
	return below(req, &ch.RequestBefore) || (lim != nil && below(*lim, ch.LimitBefore))
}

// bound is a resource's entry of a bound list in cores or bytes, 0 if none.
func bound(r corev1.ResourceName, l corev1.ResourceList) float64 {
	if q, ok := l[r]; ok {
		return toFloat(r, q)
	}
	return 0
}

// controlsLimits reports whether the policy moves limits with requests.
func controlsLimits(pol v1alpha1.ContainerPolicy) bool {
	return pol.ControlledValues == nil || *pol.ControlledValues == v1alpha1.ControlledValuesRequestsAndLimits
}

// shape applies bounds, step limits and tolerance to a target request v
// against the current request cur. Nil means the change is not worth making.
// A direct change (a pod being created, a startup boost) takes bounds only.
func (in Input) shape(r corev1.ResourceName, cur, v float64, minAllowed, maxAllowed corev1.ResourceList, direct bool, notes *[]string) *float64 {
	if lo, ok := minAllowed[r]; ok && v < toFloat(r, lo) {
		v = toFloat(r, lo)
		*notes = append(*notes, "raised to minAllowed "+lo.String())
	}
	if hi, ok := maxAllowed[r]; ok && v > toFloat(r, hi) {
		v = toFloat(r, hi)
		*notes = append(*notes, "capped at maxAllowed "+hi.String())
	}
	if direct {
		if v == cur {
			return nil
		}
		return &v
	}
	v = in.step(cur, v, notes)
	tolerance := in.tolerance(v > cur)
	if cur > 0 && math.Abs(v-cur)/cur < tolerance {
		return nil
	}
	return &v
}

// withinTolerance is the skip shape returns nil for.
func (in Input) withinTolerance(container string, r corev1.ResourceName, cur, target float64, pol v1alpha1.ContainerPolicy) *Skip {
	var notes []string
	v := in.step(cur, target, &notes)
	if lo, ok := pol.MinAllowed[r]; ok && v < toFloat(r, lo) {
		v = toFloat(r, lo)
	}
	if hi, ok := pol.MaxAllowed[r]; ok && v > toFloat(r, hi) {
		v = toFloat(r, hi)
	}
	tolerance := in.tolerance(v > cur)
	from, to := fromFloat(r, cur), fromFloat(r, v)
	return &Skip{Container: container, Resource: r, Reason: SkipWithinTolerance,
		Message: fmt.Sprintf("%s %s -> %s is within the %.0f%% tolerance", r, from.String(), to.String(), tolerance*100)}
}

// apply turns a shaped request v into the new request and limit (the limit
// is meaningful only when lim is not nil). Memory keeps the working-set
// floor: no request tailor sets is below the working set plus headroom, and
// a limit that follows its request follows it there too; a limit the policy
// does not control is never raised for it. A negative request means memory
// would be lowered without a known working set.
//
// maxAllowed (0: none) is a bound the floor does not pass when raising: a
// container using more than its policy allows gets the most it allows.
func (in Input) apply(r corev1.ResourceName, v, req float64, lim *resource.Quantity, controlsLimit bool, ws map[string]resource.Quantity, name string, maxAllowed float64, notes *[]string) (float64, float64) {
	newReq := v
	var oldLim float64
	if lim != nil {
		oldLim = toFloat(r, *lim)
	}
	if r == corev1.ResourceMemory && !in.Creating {
		w, known := ws[name]
		if !known && newReq < req {
			return -1, 0
		}
		if floor := toFloat(r, w) * (1 + in.MemoryFloorHeadroom); known && newReq < floor {
			newReq = floor
			*notes = append(*notes, fmt.Sprintf("kept above working set %s + %.0f%%", w.String(), in.MemoryFloorHeadroom*100))
			if maxAllowed > 0 && newReq > maxAllowed && newReq > req {
				newReq = max(maxAllowed, req)
				*notes = append(*notes, "working set above maxAllowed: held at the most it allows")
			}
		}
	}
	switch {
	case lim == nil:
		return newReq, 0
	case controlsLimit && req > 0:
		return newReq, newReq * oldLim / req
	case newReq > oldLim:
		*notes = append(*notes, "request capped at the unchanged limit")
		return oldLim, oldLim
	}
	return newReq, oldLim
}

// fit cuts a raise of the request to the room left on the node, keeping the
// request/limit ratio the change had (and requests == limits when
// Guaranteed), and takes what it uses from room. Lowering a request frees room
// only once applied, so it is not counted: the cut errs towards asking less.
func (in Input) fit(ch *Change, r corev1.ResourceName, qos corev1.PodQOSClass, room corev1.ResourceList) (*Change, *Skip, *Shortfall) {
	before, now := toFloat(r, ch.RequestBefore), toFloat(r, ch.RequestNow)
	if now <= before {
		return ch, nil, nil
	}
	free, known := room[r]
	if !known {
		// Nothing limits it: no node or quota said how much there is.
		return ch, nil, nil
	}
	allowed := before + toFloat(r, free)
	if now <= allowed {
		used := fromFloat(r, now-before)
		free.Sub(used)
		room[r] = free
		return ch, nil, nil
	}
	short := &Shortfall{Container: ch.Container, Resource: r, Wanted: ch.RequestNow, Room: free.DeepCopy()}
	// Round down: a cut rounded up would again not fit.
	got := floorQuantity(r, allowed)
	tolerance := in.tolerance(true)
	if toFloat(r, got) < before*(1+tolerance) {
		short.Got = ch.RequestBefore
		return nil, &Skip{Container: ch.Container, Resource: r, Reason: SkipNoRoom,
			Message: fmt.Sprintf("%s request %s -> %s does not fit: the node has %s more free", r, ch.RequestBefore.String(), ch.RequestNow.String(), free.String())}, short
	}
	scale := toFloat(r, got) / now
	out := *ch
	out.Notes = append(append([]string(nil), ch.Notes...), fmt.Sprintf("raise cut to what fits on the node (%s free; wanted %s)", free.String(), ch.RequestNow.String()))
	out.RequestNow = got
	if ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) != 0 {
		lim := fromFloat(r, toFloat(r, *ch.LimitNow)*scale)
		if qos == corev1.PodQOSGuaranteed {
			lim = got
		}
		if lim.Cmp(*ch.LimitBefore) < 0 {
			lim = ch.LimitBefore.DeepCopy()
		}
		out.LimitNow = &lim
	}
	short.Got = got
	room[r] = resource.Quantity{Format: free.Format}
	return &out, nil, short
}

// keptOr is fromFloat(r, v), or was itself where v is what was has (within
// float noise): a value the decision keeps (a request held for an HPA or at
// maxAllowed, a limit that follows an unchanged request) stays as it is to
// the byte, not rounded to whole MiB, which would move a request that is
// not a whole number of MiB (a "1G") and send a resize for nothing.
func keptOr(r corev1.ResourceName, v float64, was resource.Quantity) resource.Quantity {
	if math.Abs(v-toFloat(r, was)) < 0.5 {
		return was.DeepCopy()
	}
	return fromFloat(r, v)
}

// floorQuantity is fromFloat rounding down.
// The allowance for float noise is a thousandth of the unit counted (a
// millicore, a byte), not of a MiB: a room a byte short of a whole MiB is
// not rounded up to it.
func floorQuantity(r corev1.ResourceName, v float64) resource.Quantity {
	const eps = 1e-3
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Floor(v+eps)), resource.DecimalSI)
	}
	const mi = 1 << 20
	return *resource.NewQuantity(int64(math.Floor((v+eps)/mi))*mi, resource.BinarySI)
}

// step applies maxStepPercent for the direction of the change.
func (in Input) step(cur, v float64, notes *[]string) float64 {
	b := in.Spec.Behavior
	if b == nil || cur <= 0 {
		return v
	}
	if v > cur && b.ScaleUp != nil && b.ScaleUp.MaxStepPercent != nil {
		if hi := cur * (1 + float64(*b.ScaleUp.MaxStepPercent)/100); v > hi {
			*notes = append(*notes, fmt.Sprintf("raise limited to %d%% per resize", *b.ScaleUp.MaxStepPercent))
			return hi
		}
	}
	if v < cur && b.ScaleDown != nil && b.ScaleDown.MaxStepPercent != nil {
		if lo := cur * (1 - float64(*b.ScaleDown.MaxStepPercent)/100); v < lo {
			*notes = append(*notes, fmt.Sprintf("lowering limited to %d%% per resize", *b.ScaleDown.MaxStepPercent))
			return lo
		}
	}
	return v
}

// tolerance is the share of the current value a change in that direction
// must pass to be made: the policy's tolerancePercent, or DefaultTolerance.
func (in Input) tolerance(up bool) float64 {
	var p *int32
	if b := in.Spec.Behavior; b != nil {
		switch {
		case up && b.ScaleUp != nil:
			p = b.ScaleUp.TolerancePercent
		case !up && b.ScaleDown != nil:
			p = b.ScaleDown.TolerancePercent
		}
	}
	if p == nil {
		return DefaultTolerance
	}
	return float64(*p) / 100
}

// RestartsFor reports whether resizing r restarts the container (its
// resizePolicy says RestartContainer).
func RestartsFor(c *corev1.Container, r corev1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy == corev1.RestartContainer
		}
	}
	return false
}

// CPU is handled in millicores and memory in bytes, rounded up so a target is
// never shaved below what was recommended.
func toFloat(r corev1.ResourceName, q resource.Quantity) float64 {
	if r == corev1.ResourceCPU {
		return float64(q.MilliValue())
	}
	return float64(q.Value())
}

func fromFloat(r corev1.ResourceName, v float64) resource.Quantity {
	// The epsilon keeps float noise (200Mi * 1.1) from rounding up a unit.
	const eps = 1e-6
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Ceil(v-eps)), resource.DecimalSI)
	}
	// Whole MiB: kubelets and people read these; 1 MiB is noise for memory.
	const mi = 1 << 20
	return *resource.NewQuantity(int64(math.Ceil(v/mi-eps))*mi, resource.BinarySI)
}
