package podchange

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// HasPodLevel reports whether the pod sets pod-level resources
// (spec.resources), which then bound what its containers may be given.
func HasPodLevel(p *corev1.Pod) bool {
	r := p.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

// podLevelHas reports whether the pod has a pod-level request for r, which
// then decides how the pod is placed and its QoS class.
func podLevelHas(p *corev1.Pod, r corev1.ResourceName) bool {
	if p.Spec.Resources == nil {
		return false
	}
	_, ok := p.Spec.Resources.Requests[r]
	return ok
}

// decidePodLevel sizes a pod's pod-level resources from the target for the
// pod as a whole (the sum of its containers' usage), with the controlledValues
// and allowRestart of the "*" container policy and, as bounds, the sums of its
// containers' minAllowed and maxAllowed. Whatever the target, it keeps the
// rules Kubernetes checks: pod requests at least the sum of the containers'
// requests, and no container limit above the pod's.
func (in Input) decidePodLevel(d *Decision, room corev1.ResourceList) {
	pr := in.Pod.Spec.Resources
	star, err := in.Spec.PolicyFor(v1alpha1.DefaultContainerName)
	if err != nil || (star.Mode != nil && *star.Mode == v1alpha1.ContainerModeOff) {
		return
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, ok := pr.Requests[r]
		if !ok {
			continue
		}
		if in.Holds.All[r] {
			// The HPA divides by the pod's request: it stays, and with it
			// the pod-level limit, which decides alongside it; the
			// containers' changes only as far as they still fit inside.
			why := fmt.Sprintf("pod-level %s kept for the HorizontalPodAutoscaler, which scales on its utilization", r)
			d.Skips = append(d.Skips, Skip{Container: podcontainers.PodLevelName, Resource: r, Reason: SkipHPA, Message: why})
			var lim *resource.Quantity
			if l, ok := pr.Limits[r]; ok {
				lim = &l
			}
			if !in.podHolds(d, r, req, lim) {
				in.dropContainerRaises(d, r, SkipHPA, why)
			}
			continue
		}
		var lim *resource.Quantity
		if l, ok := pr.Limits[r]; ok {
			lim = &l
		}
		ch := Change{Container: podcontainers.PodLevelName, Resource: r, RequestBefore: req, LimitBefore: lim}
		cur := toFloat(r, req)
		newReq := cur
		newLim := 0.0
		if lim != nil {
			newLim = toFloat(r, *lim)
		}
		if t := in.PodTarget.of(r); t != nil && Controls(star, r) {
			minAllowed, maxAllowed := in.podBounds(r)
			ws := map[string]resource.Quantity{}
			if w, ok := in.podWorkingSet(); ok {
				ws[podcontainers.PodLevelName] = w
			}
			v := in.shape(r, cur, toFloat(r, *t), minAllowed, maxAllowed, in.Creating, &ch.Notes)
			if w, known := ws[podcontainers.PodLevelName]; v == nil && r == corev1.ResourceMemory && !in.Creating && known && w.Cmp(req) > 0 {
				// As a container's (belowWorkingSet): the request holds by
				// the tolerance, yet the pod's containers hold more than
				// it, and the kubelet evicts first the pods using more
				// than they requested. apply raises it to the floor; the
				// limit follows the request up, never down.
				v = &cur
			}
			if v != nil {
				newReq, newLim = in.apply(r, *v, cur, lim, controlsLimits(star), ws, podcontainers.PodLevelName, bound(r, maxAllowed), &ch.Notes)
				if newReq < 0 {
					d.Skips = append(d.Skips, Skip{Container: podcontainers.PodLevelName, Resource: r, Reason: SkipNoWorkingSet,
						Message: "pod-level memory not lowered: a container's working set is unknown"})
					newReq, newLim = cur, toFloat(r, ptrOr(lim))
				}
			}
		}
		newReq, newLim = in.podRules(d, r, newReq, newLim, lim, controlsLimits(star), &ch.Notes)
		ch.RequestNow = keptOr(r, newReq, req)
		if lim != nil {
			q := keptOr(r, newLim, *lim)
			ch.LimitNow = &q
		}
		if ch.RequestNow.Cmp(req) == 0 && (lim == nil || ch.LimitNow.Cmp(*lim) == 0) {
			continue
		}
		// hold keeps the pod-level values as they are, and with them the
		// containers' raises only as far as they still fit inside.
		hold := func(reason SkipReason, why string) {
			d.Skips = append(d.Skips, Skip{Container: podcontainers.PodLevelName, Resource: r, Reason: reason, Message: why})
			if !in.podHolds(d, r, req, lim) {
				in.dropContainerRaises(d, r, reason, why)
			}
		}
		if lim != nil && ch.LimitNow.Cmp(*lim) != 0 {
			if c := in.restartingWithoutLimit(r); c != "" {
				hold(SkipRestartNotAllowed, fmt.Sprintf("pod-level %s limit change would restart container %s (resizePolicy RestartContainer, no limit of its own) and the policy does not allow restarts", r, c))
				continue
			}
		}
		if !in.keepPodQoS(d, &ch) {
			hold(SkipQoSChange, fmt.Sprintf("pod-level %s request %s -> %s would change the pod's QoS class from %s; with controlledValues RequestsAndLimits requests and limits move together", r, req.String(), ch.RequestNow.String(), qosutil.GetPodQOS(in.Pod)))
			continue
		}
		if room != nil {
			fitted, skip, short := in.fit(&ch, r, qosutil.GetPodQOS(in.Pod), room)
			if short != nil {
				short.Container = podcontainers.PodLevelName
				d.Short = append(d.Short, *short)
			}
			if skip != nil {
				d.Skips = append(d.Skips, *skip)
				if !in.podHolds(d, r, req, lim) {
					in.dropContainerRaises(d, r, SkipNoRoom, "the pod-level request cannot grow to hold it on this node")
				}
				continue
			}
			// A cut pod may no longer hold its containers' raises: the
			// request their sum, or the limit (cut with its request) the
			// largest of theirs.
			cut := fitted.RequestNow.Cmp(ch.RequestNow) < 0
			unheld := toFloat(r, fitted.RequestNow) < in.containerSum(d, r) ||
				(fitted.LimitNow != nil && toFloat(r, *fitted.LimitNow) < in.containerMaxLimit(d, r))
			if cut && unheld {
				in.dropContainerRaises(d, r, SkipNoRoom, "the pod-level resources cannot grow to hold it on this node")
			}
			ch = *fitted
		}
		d.PodChanges = append(d.PodChanges, ch)
	}
}

// podHolds reports whether pod-level values req and lim hold the containers'
// requests and limits of r as changed so far.
func (in Input) podHolds(d *Decision, r corev1.ResourceName, req resource.Quantity, lim *resource.Quantity) bool {
	if in.containerSum(d, r) > toFloat(r, req) {
		return false
	}
	return lim == nil || in.containerMaxLimit(d, r) <= toFloat(r, *lim)
}

// keepPodQoS keeps the pod's QoS class through a pod-level change, which
// alone decides it: a request that would reach its limit in a Burstable pod
// stops just below it. It reports false when the class would still change.
func (in Input) keepPodQoS(d *Decision, ch *Change) bool {
	before := qosutil.GetPodQOS(in.Pod)
	with := func() corev1.PodQOSClass {
		trial := *d
		trial.PodChanges = append(append([]Change(nil), d.PodChanges...), *ch)
		return in.after(&trial)
	}
	if with() == before {
		return true
	}
	if before == corev1.PodQOSBurstable && ch.LimitNow != nil && ch.RequestNow.Cmp(*ch.LimitNow) >= 0 {
		below := justBelow(ch.Resource, *ch.LimitNow)
		if toFloat(ch.Resource, below) < in.containerSum(d, ch.Resource) {
			// The containers' requests alone fill the pod's limit.
			return false
		}
		ch.RequestNow = below
		ch.Notes = append(ch.Notes, fmt.Sprintf("request kept just below the %s limit: at the limit the pod would become Guaranteed", ch.LimitNow.String()))
		return with() == before
	}
	return false
}

// podRules keeps the pod-level values consistent with the containers' as
// changed so far: requests at least their sum, the limit at least the
// highest container limit and at least the request. A limit the policy does
// not control does not move for that: the container raises it cannot hold
// are taken back instead.
func (in Input) podRules(d *Decision, r corev1.ResourceName, newReq, newLim float64, lim *resource.Quantity, controlsLimit bool, notes *[]string) (float64, float64) {
	if sum := in.containerSum(d, r); newReq < sum {
		newReq = sum
		*notes = append(*notes, "pod request kept at least the sum of its containers' requests")
	}
	if lim == nil {
		return newReq, newLim
	}
	if hi := in.containerMaxLimit(d, r); newLim < hi {
		newLim = hi
		*notes = append(*notes, "pod limit kept at least its largest container limit")
	}
	if newReq <= newLim {
		return newReq, newLim
	}
	if controlsLimit {
		*notes = append(*notes, "pod limit raised with the pod request")
		return newReq, newReq
	}
	in.dropContainerRaises(d, r, SkipPodLevelLimit, "the pod-level limit, which the policy does not control, cannot hold it")
	*notes = append(*notes, "pod request capped at the unchanged pod limit")
	return max(min(newReq, newLim), in.containerSum(d, r)), newLim
}

// containerSum is what the containers request of r together, with the
// changes in d applied, counted as Kubernetes checks pod-level requests
// against it: regular containers and sidecars summed, classic init
// containers by the largest.
func (in Input) containerSum(d *Decision, r corev1.ResourceName) float64 {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     append([]corev1.Container(nil), in.Pod.Spec.Containers...),
		InitContainers: append([]corev1.Container(nil), in.Pod.Spec.InitContainers...),
	}}
	for _, ch := range d.Changes {
		if c := podcontainers.Named(p, ch.Container); c != nil && ch.Resource == r {
			c.Resources.Requests = c.Resources.Requests.DeepCopy()
			c.Resources.Requests[r] = ch.RequestNow
		}
	}
	sum := resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{})
	q, ok := sum[r]
	if !ok {
		return 0
	}
	return toFloat(r, q)
}

func (in Input) containerMaxLimit(d *Decision, r corev1.ResourceName) float64 {
	hi := 0.0
	for _, c := range podcontainers.Running(&in.Pod.Spec) {
		q, ok := c.Resources.Limits[r]
		for _, ch := range d.Changes {
			if ch.Container == c.Name && ch.Resource == r && ch.LimitNow != nil {
				q, ok = *ch.LimitNow, true
			}
		}
		if ok && toFloat(r, q) > hi {
			hi = toFloat(r, q)
		}
	}
	return hi
}

// dropContainerRaises takes back the container request raises of r that the
// pod-level resources cannot hold.
func (in Input) dropContainerRaises(d *Decision, r corev1.ResourceName, reason SkipReason, why string) {
	kept := d.Changes[:0]
	for _, ch := range d.Changes {
		limitRaised := ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) > 0
		if ch.Resource == r && (ch.RequestNow.Cmp(ch.RequestBefore) > 0 || limitRaised) {
			d.Skips = append(d.Skips, Skip{Container: ch.Container, Resource: r, Reason: reason,
				Message: fmt.Sprintf("%s request %s -> %s not sent: %s", r, ch.RequestBefore.String(), ch.RequestNow.String(), why)})
			continue
		}
		kept = append(kept, ch)
	}
	d.Changes = kept
}

// podBounds sums the containers' bounds; a container without a maximum
// leaves the pod without one.
func (in Input) podBounds(r corev1.ResourceName) (corev1.ResourceList, corev1.ResourceList) {
	lo, hi := 0.0, 0.0
	unbounded := false
	for _, c := range podcontainers.Running(&in.Pod.Spec) {
		pol, err := in.Spec.PolicyFor(c.Name)
		if err != nil {
			continue
		}
		if q, ok := pol.MinAllowed[r]; ok {
			lo += toFloat(r, q)
		}
		if q, ok := pol.MaxAllowed[r]; ok {
			hi += toFloat(r, q)
		} else {
			unbounded = true
		}
	}
	minAllowed, maxAllowed := corev1.ResourceList{}, corev1.ResourceList{}
	if lo > 0 {
		minAllowed[r] = fromFloat(r, lo)
	}
	if !unbounded && hi > 0 {
		maxAllowed[r] = floorQuantity(r, hi)
	}
	return minAllowed, maxAllowed
}

// podWorkingSet is the sum of the running containers' working sets, known
// only when every one of them is.
func (in Input) podWorkingSet() (resource.Quantity, bool) {
	var sum resource.Quantity
	for _, c := range podcontainers.Running(&in.Pod.Spec) {
		w, ok := in.WorkingSet[c.Name]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(w)
	}
	return sum, true
}

// restartingWithoutLimit names a container whose effective limit is the
// pod's, whose resizePolicy restarts it and whose policy does not allow
// that, or "".
func (in Input) restartingWithoutLimit(r corev1.ResourceName) string {
	// The planner counts classic init containers too, as the kubelet's
	// resize accounting does: tailor errs with it.
	all := podcontainers.Running(&in.Pod.Spec)
	for i := range in.Pod.Spec.InitContainers {
		if c := &in.Pod.Spec.InitContainers[i]; !podcontainers.IsSidecar(c) {
			all = append(all, c)
		}
	}
	for _, c := range all {
		if _, own := c.Resources.Limits[r]; own || !RestartsFor(c, r) {
			continue
		}
		if pol, err := in.Spec.PolicyFor(c.Name); err != nil || !allowsRestart(pol) {
			return c.Name
		}
	}
	return ""
}

// Controls reports whether the policy's controlledResources name r.
func Controls(pol v1alpha1.ContainerPolicy, r corev1.ResourceName) bool {
	for _, c := range pol.ControlledResources {
		if c == r {
			return true
		}
	}
	return false
}

func allowsRestart(pol v1alpha1.ContainerPolicy) bool {
	return pol.AllowRestart != nil && *pol.AllowRestart
}

func ptrOr(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return *q
}
