package autoscale

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/resize"
)

// Target is what the recommender wants for one container: the value its
// usage must fit under (peaks plus margin). It sizes the limit where the
// policy controls limits, else the request. Bounds (minAllowed, maxAllowed)
// apply to it. Nil holds that resource as it is.
type Target struct {
	CPU    *resource.Quantity
	Memory *resource.Quantity
}

func (t Target) of(r corev1.ResourceName) *resource.Quantity {
	if r == corev1.ResourceCPU {
		return t.CPU
	}
	return t.Memory
}

// Input is everything Decide needs about one pod; the controller gathers it.
type Input struct {
	Pod  *corev1.Pod
	Spec *v1alpha1.TailorPolicySpec
	// Targets by container name.
	Targets map[string]Target
	// WorkingSet is each container's current memory working set; a container
	// missing here has no memory floor known, so its memory is never lowered.
	WorkingSet map[string]resource.Quantity
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
}

// Decision is what to ask Kubernetes for, and what was held back and why.
type Decision struct {
	Desired resize.Desired
	Changes []Change
	Skips   []Skip
	// RetryAfter is set when the pod was resized too recently.
	RetryAfter time.Duration
	// Short lists the raises the node's room cut, partly (in Changes) or
	// wholly (in Skips as NodeFull): what in place cannot give now.
	Short []Shortfall
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
func (d Decision) Empty() bool { return len(d.Changes) == 0 }

// Raises reports whether any change raises a request or a limit.
func (d Decision) Raises() bool {
	for _, c := range d.Changes {
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

// Decide turns recommendations into a resize for one pod, keeping every rule
// tailor promises: the QoS class stays, no restart the policy does not allow,
// memory limits never below the working set plus headroom, bounds and step
// limits respected. What it returns is still checked by the resize planner.
func Decide(in Input) (Decision, error) {
	var d Decision
	if in.Pod == nil || in.Spec == nil {
		return d, fmt.Errorf("decide: pod and policy are required")
	}
	if in.Spec.UpdatePolicy != nil && in.Spec.UpdatePolicy.UpdateMode == v1alpha1.UpdateModeOff {
		d.Skips = append(d.Skips, Skip{Reason: SkipPolicyOff, Message: "updateMode is Off: recommendations only"})
		return d, nil
	}
	if !in.LastResize.IsZero() {
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
	names := make([]string, 0, len(in.Targets))
	for n := range in.Targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := findContainer(in.Pod, name)
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
		want := corev1.ResourceRequirements{}
		for _, r := range pol.ControlledResources {
			t := in.Targets[name].of(r)
			if t == nil {
				continue
			}
			ch, skip := in.decideResource(c, pol, qos, r, *t)
			if ch != nil && room != nil {
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
			if ch == nil {
				continue
			}
			d.Changes = append(d.Changes, *ch)
			if want.Requests == nil {
				want.Requests = corev1.ResourceList{}
			}
			want.Requests[r] = ch.RequestNow
			if ch.LimitNow != nil {
				if want.Limits == nil {
					want.Limits = corev1.ResourceList{}
				}
				want.Limits[r] = *ch.LimitNow
			}
		}
		if len(want.Requests) > 0 || len(want.Limits) > 0 {
			if d.Desired.Containers == nil {
				d.Desired.Containers = map[string]corev1.ResourceRequirements{}
			}
			d.Desired.Containers[name] = want
		}
	}
	return d, nil
}

// decideResource shapes one resource's new request and limit, or says why not.
func (in Input) decideResource(c *corev1.Container, pol v1alpha1.ContainerPolicy, qos corev1.PodQOSClass, r corev1.ResourceName, target resource.Quantity) (*Change, *Skip) {
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

	// The target sizes what usage must fit under: the limit when the policy
	// controls limits (the request follows at the ratio the workload chose),
	// else the request.
	guaranteed := qos == corev1.PodQOSGuaranteed
	requestsAndLimits := pol.ControlledValues == nil || *pol.ControlledValues == v1alpha1.ControlledValuesRequestsAndLimits
	controlsLimit := lim != nil && (guaranteed || requestsAndLimits)
	cur := toFloat(r, req)
	if controlsLimit {
		cur = toFloat(r, *lim)
	}

	v := toFloat(r, target)
	if lo, ok := pol.MinAllowed[r]; ok && v < toFloat(r, lo) {
		v = toFloat(r, lo)
		ch.Notes = append(ch.Notes, "raised to minAllowed "+lo.String())
	}
	if hi, ok := pol.MaxAllowed[r]; ok && v > toFloat(r, hi) {
		v = toFloat(r, hi)
		ch.Notes = append(ch.Notes, "capped at maxAllowed "+hi.String())
	}
	v = in.step(cur, v, &ch.Notes)

	tolerance := DefaultTolerance
	if p := in.tolerancePercent(v > cur); p != nil {
		tolerance = float64(*p) / 100
	}
	if cur > 0 && math.Abs(v-cur)/cur < tolerance {
		from, to := fromFloat(r, cur), fromFloat(r, v)
		return nil, skip(SkipWithinTolerance, "%s %s -> %s is within the %.0f%% tolerance", r, from.String(), to.String(), tolerance*100)
	}

	var newReq float64
	var newLim *float64
	switch {
	case guaranteed:
		// Guaranteed keeps requests == limits, whatever controlledValues says.
		newReq, newLim = v, &v
	case controlsLimit:
		newLim = &v
		newReq = v * toFloat(r, req) / cur
	default:
		newReq = v
		if lim != nil {
			l := toFloat(r, *lim)
			newLim = &l
			if newReq > l {
				newReq = l
				ch.Notes = append(ch.Notes, "request capped at the unchanged limit")
			}
		}
	}

	if r == corev1.ResourceMemory {
		ws, known := in.WorkingSet[c.Name]
		lowering := newReq < toFloat(r, req) || (newLim != nil && lim != nil && *newLim < toFloat(r, *lim))
		if !known && lowering {
			return nil, skip(SkipNoWorkingSet, "memory not lowered: the container's working set is unknown")
		}
		if known && newLim != nil {
			floor := toFloat(r, ws) * (1 + in.MemoryFloorHeadroom)
			if *newLim < floor {
				*newLim = floor
				ch.Notes = append(ch.Notes, fmt.Sprintf("limit kept above working set %s + %.0f%%", ws.String(), in.MemoryFloorHeadroom*100))
				if guaranteed {
					newReq = floor
				}
			}
		}
	}

	ch.RequestNow = fromFloat(r, newReq)
	if newLim != nil {
		q := fromFloat(r, *newLim)
		ch.LimitNow = &q
	}
	if ch.RequestNow.Cmp(req) == 0 && (lim == nil || ch.LimitNow.Cmp(*lim) == 0) {
		return nil, nil
	}
	if restartsFor(c, r) && (pol.AllowRestart == nil || !*pol.AllowRestart) {
		return nil, skip(SkipRestartNotAllowed, "%s resizePolicy is RestartContainer and the policy does not allow restarts", r)
	}
	return ch, nil
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
	free := room[r]
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
	tolerance := DefaultTolerance
	if p := in.tolerancePercent(true); p != nil {
		tolerance = float64(*p) / 100
	}
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

// floorQuantity is fromFloat rounding down.
func floorQuantity(r corev1.ResourceName, v float64) resource.Quantity {
	const eps = 1e-6
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Floor(v+eps)), resource.DecimalSI)
	}
	const mi = 1 << 20
	return *resource.NewQuantity(int64(math.Floor(v/mi+eps))*mi, resource.BinarySI)
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

func (in Input) tolerancePercent(up bool) *int32 {
	b := in.Spec.Behavior
	switch {
	case b == nil:
		return nil
	case up && b.ScaleUp != nil:
		return b.ScaleUp.TolerancePercent
	case !up && b.ScaleDown != nil:
		return b.ScaleDown.TolerancePercent
	}
	return nil
}

func restartsFor(c *corev1.Container, r corev1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy == corev1.RestartContainer
		}
	}
	return false
}

// findContainer returns a regular container or sidecar by name: the ones that
// run alongside the workload. Finished init containers are not autoscaled.
func findContainer(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
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
