package autoscale

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// PodLevelName names the pod-level spec.resources where a container name is
// expected (status, events, recommender state). No container can have it: a
// container name is a DNS label, which has no underscore.
const PodLevelName = "_pod"

func hasPodLevel(p *corev1.Pod) bool {
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
		var lim *resource.Quantity
		if l, ok := pr.Limits[r]; ok {
			lim = &l
		}
		ch := Change{Container: PodLevelName, Resource: r, RequestBefore: req, LimitBefore: lim}
		cur := toFloat(r, req)
		newReq := cur
		newLim := 0.0
		if lim != nil {
			newLim = toFloat(r, *lim)
		}
		if t := in.PodTarget.of(r); t != nil && controls(star, r) {
			minAllowed, maxAllowed := in.podBounds(r)
			if v := in.shape(r, cur, toFloat(r, *t), minAllowed, maxAllowed, &ch.Notes); v != nil {
				ws := map[string]resource.Quantity{}
				if w, ok := in.podWorkingSet(); ok {
					ws[PodLevelName] = w
				}
				newReq, newLim = in.apply(r, *v, cur, lim, controlsLimits(star), ws, PodLevelName, &ch.Notes)
				if newReq < 0 {
					d.Skips = append(d.Skips, Skip{Container: PodLevelName, Resource: r, Reason: SkipNoWorkingSet,
						Message: "pod-level memory not lowered: a container's working set is unknown"})
					newReq, newLim = cur, toFloat(r, ptrOr(lim))
				}
			}
		}
		newReq, newLim = in.podRules(d, r, newReq, newLim, lim, &ch.Notes)
		ch.RequestNow = fromFloat(r, newReq)
		if lim != nil {
			q := fromFloat(r, newLim)
			ch.LimitNow = &q
		}
		if ch.RequestNow.Cmp(req) == 0 && (lim == nil || ch.LimitNow.Cmp(*lim) == 0) {
			continue
		}
		if lim != nil && ch.LimitNow.Cmp(*lim) != 0 && !allowsRestart(star) {
			if c := in.restartingWithoutLimit(r); c != "" {
				d.Skips = append(d.Skips, Skip{Container: PodLevelName, Resource: r, Reason: SkipRestartNotAllowed,
					Message: fmt.Sprintf("pod-level %s limit change would restart container %s (resizePolicy RestartContainer, no limit of its own) and the policy does not allow restarts", r, c)})
				continue
			}
		}
		if room != nil {
			fitted, skip, short := in.fit(&ch, r, corev1.PodQOSBurstable, room)
			if short != nil {
				short.Container = PodLevelName
				d.Short = append(d.Short, *short)
			}
			if skip != nil {
				d.Skips = append(d.Skips, *skip)
				in.dropContainerRaises(d, r)
				continue
			}
			if fitted.RequestNow.Cmp(ch.RequestNow) < 0 && toFloat(r, fitted.RequestNow) < in.containerSum(d, r) {
				in.dropContainerRaises(d, r)
			}
			ch = *fitted
		}
		d.PodChanges = append(d.PodChanges, ch)
	}
}

// podRules keeps the pod-level values consistent with the containers' as
// changed so far: requests at least their sum, the limit at least the
// highest container limit, the request at most the limit.
func (in Input) podRules(d *Decision, r corev1.ResourceName, newReq, newLim float64, lim *resource.Quantity, notes *[]string) (float64, float64) {
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
	if newReq > newLim {
		newReq = newLim
		*notes = append(*notes, "pod request capped at the pod limit")
	}
	return newReq, newLim
}

// containerSum is the sum of the regular and sidecar containers' requests for
// r, with the changes in d applied. Classic init containers run before the
// others and never together: Kubernetes counts the larger of them and the
// sum, which sidecars make hard to exceed, and tailor never resizes them.
func (in Input) containerSum(d *Decision, r corev1.ResourceName) float64 {
	sum := 0.0
	for _, c := range runningContainers(in.Pod) {
		q, ok := c.Resources.Requests[r]
		for _, ch := range d.Changes {
			if ch.Container == c.Name && ch.Resource == r {
				q, ok = ch.RequestNow, true
			}
		}
		if ok {
			sum += toFloat(r, q)
		}
	}
	return sum
}

func (in Input) containerMaxLimit(d *Decision, r corev1.ResourceName) float64 {
	hi := 0.0
	for _, c := range runningContainers(in.Pod) {
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

// dropContainerRaises takes back the container request raises of r when the
// pod-level request could not grow to hold them.
func (in Input) dropContainerRaises(d *Decision, r corev1.ResourceName) {
	kept := d.Changes[:0]
	for _, ch := range d.Changes {
		if ch.Resource == r && ch.RequestNow.Cmp(ch.RequestBefore) > 0 {
			d.Skips = append(d.Skips, Skip{Container: ch.Container, Resource: r, Reason: SkipNoRoom,
				Message: fmt.Sprintf("%s request %s -> %s not sent: the pod-level request cannot grow to hold it on this node", r, ch.RequestBefore.String(), ch.RequestNow.String())})
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
	for _, c := range runningContainers(in.Pod) {
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
	for _, c := range runningContainers(in.Pod) {
		w, ok := in.WorkingSet[c.Name]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(w)
	}
	return sum, true
}

// restartingWithoutLimit names a container whose effective limit is the
// pod's and whose resizePolicy restarts it, or "".
func (in Input) restartingWithoutLimit(r corev1.ResourceName) string {
	for _, c := range runningContainers(in.Pod) {
		if _, own := c.Resources.Limits[r]; !own && restartsFor(c, r) {
			return c.Name
		}
	}
	return ""
}

func runningContainers(p *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	for i := range p.Spec.Containers {
		out = append(out, &p.Spec.Containers[i])
	}
	return out
}

func controls(pol v1alpha1.ContainerPolicy, r corev1.ResourceName) bool {
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
