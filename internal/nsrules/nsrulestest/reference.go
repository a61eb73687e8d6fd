package nsrulestest

import (
	"fmt"
	"math/big"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Reference states the refusals of the LimitRanger's validation and of the
// ResourceQuota admission plugin a second time, apart from nsrules, for the
// property tests that judge what the decision sends. Asking the engine
// whether the engine's own output passes proves nothing when the engine is
// wrong; this does, because it is written from Kubernetes' rules directly
// and shares no code with nsrules.
//
// It is deliberately smaller than the engine: no defaulting (give it the
// pod as the LimitRanger admitted it), no messages, and only the quotas
// without scopes whose status says what is used (the ones whose charge it
// can know without the engine's scope matching). What it does not cover it
// does not refuse, so it can miss an engine's mistake but never invent one.
type Reference struct {
	LimitRanges []corev1.LimitRange
	hard        []quotaHard
	// used is what each unscoped quota has charged, by quota name: its
	// status, plus the resizes Charge took since.
	used map[string]corev1.ResourceList
}

// NewReference is a Reference for the namespace's objects.
func NewReference(lrs []corev1.LimitRange, quotas []corev1.ResourceQuota) *Reference {
	ref := &Reference{LimitRanges: lrs, used: map[string]corev1.ResourceList{}}
	for _, q := range quotas {
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil || q.Status.Used == nil {
			continue
		}
		hard := corev1.ResourceList{}
		for res, v := range q.Status.Hard {
			if _, ok := q.Status.Used[res]; ok && quotaCharged[res] != "" {
				hard[res] = v
			}
		}
		if len(hard) == 0 {
			continue
		}
		ref.hard = append(ref.hard, quotaHard{name: q.Name, hard: hard})
		ref.used[q.Name] = q.Status.Used.DeepCopy()
	}
	return ref
}

type quotaHard struct {
	name string
	hard corev1.ResourceList
}

// quotaCharged maps a quota's cpu and memory names to what of a pod they
// charge: requests (the bare names count requests) or limits.
var quotaCharged = map[corev1.ResourceName]string{
	corev1.ResourceCPU: "requests", corev1.ResourceMemory: "requests",
	corev1.ResourceRequestsCPU: "requests", corev1.ResourceRequestsMemory: "requests",
	corev1.ResourceLimitsCPU: "limits", corev1.ResourceLimitsMemory: "limits",
}

// Refusals are why the apiserver refuses a resize of old to pod (old nil:
// a create), pod as the LimitRanger admitted it; none when it takes it.
func (ref *Reference) Refusals(pod, old *corev1.Pod) []string {
	var out []string
	if old == nil || old.DeletionTimestamp == nil {
		out = append(out, limitRangeRefusals(ref.LimitRanges, pod)...)
	}
	for _, q := range ref.hard {
		for res, inc := range chargeOf(pod, old) {
			hard, ok := q.hard[res]
			if !ok || inc.Sign() <= 0 {
				continue
			}
			total := ref.used[q.name][res].DeepCopy()
			total.Add(inc)
			if total.Cmp(hard) > 0 {
				out = append(out, fmt.Sprintf("ResourceQuota/%s: %s would be %s, over %s", q.name, res, total.String(), hard.String()))
			}
		}
	}
	return out
}

// Charge counts a resize the apiserver took against the quotas, as it
// charges it: the increase only.
func (ref *Reference) Charge(pod, old *corev1.Pod) {
	for _, q := range ref.hard {
		for res, inc := range chargeOf(pod, old) {
			if _, ok := q.hard[res]; !ok || inc.Sign() <= 0 {
				continue
			}
			total := ref.used[q.name][res].DeepCopy()
			total.Add(inc)
			ref.used[q.name][res] = total
		}
	}
}

// chargeOf is what a quota charges for pod over old, by quota resource: the
// pod's sums, each the larger of its spec and what the kubelet reports (a
// resize being carried out holds both), less old's.
func chargeOf(pod, old *corev1.Pod) corev1.ResourceList {
	sums := func(p *corev1.Pod) map[string]corev1.ResourceList {
		opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
		return map[string]corev1.ResourceList{"requests": resourcehelper.PodRequests(p, opts), "limits": resourcehelper.PodLimits(p, opts)}
	}
	now := sums(pod)
	var before map[string]corev1.ResourceList
	if old != nil {
		before = sums(old)
	}
	out := corev1.ResourceList{}
	for res, kind := range quotaCharged {
		base := corev1.ResourceCPU
		if res == corev1.ResourceMemory || res == corev1.ResourceRequestsMemory || res == corev1.ResourceLimitsMemory {
			base = corev1.ResourceMemory
		}
		q, ok := now[kind][base]
		if !ok {
			continue
		}
		inc := q.DeepCopy()
		if b, ok := before[kind][base]; ok {
			inc.Sub(b)
		}
		out[res] = inc
	}
	return out
}

// limitRangeRefusals: every Container item's min, max and
// maxLimitRequestRatio against each container and init container, and
// every Pod item's against the pod's sums without overhead.
func limitRangeRefusals(lrs []corev1.LimitRange, pod *corev1.Pod) []string {
	var out []string
	for _, lr := range lrs {
		for _, it := range lr.Spec.Limits {
			switch it.Type {
			case corev1.LimitTypeContainer:
				for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
					for _, c := range cs {
						for _, why := range itemRefusals(it, c.Resources.Requests, c.Resources.Limits) {
							out = append(out, fmt.Sprintf("LimitRange/%s container %s: %s", lr.Name, c.Name, why))
						}
					}
				}
			case corev1.LimitTypePod:
				opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
				for _, why := range itemRefusals(it, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)) {
					out = append(out, fmt.Sprintf("LimitRange/%s pod: %s", lr.Name, why))
				}
			}
		}
	}
	return out
}

func itemRefusals(it corev1.LimitRangeItem, requests, limits corev1.ResourceList) []string {
	var out []string
	for _, res := range sized {
		req, hasReq := requests[res]
		lim, hasLim := limits[res]
		if min, ok := it.Min[res]; ok {
			if !hasReq || req.Cmp(min) < 0 || (hasLim && lim.Cmp(min) < 0) {
				out = append(out, fmt.Sprintf("%s under min %s (request %s, limit %s)", res, min.String(), show(req, hasReq), show(lim, hasLim)))
			}
		}
		if max, ok := it.Max[res]; ok {
			if !hasLim || lim.Cmp(max) > 0 || (hasReq && req.Cmp(max) > 0) {
				out = append(out, fmt.Sprintf("%s over max %s (request %s, limit %s)", res, max.String(), show(req, hasReq), show(lim, hasLim)))
			}
		}
		if ratio, ok := it.MaxLimitRequestRatio[res]; ok && ratioExceeded(ratio, req, hasReq, lim, hasLim) {
			out = append(out, fmt.Sprintf("%s limit/request over %s (request %s, limit %s)", res, ratio.String(), show(req, hasReq), show(lim, hasLim)))
		}
	}
	return out
}

// ratioExceeded: a missing or zero request or limit is refused; otherwise
// limit/request above ratio, compared exactly. The apiserver compares in
// floating point, which may round a ratio within a part in 10^12 of the
// bound either way: such a case is not called a refusal here.
func ratioExceeded(ratio, req resource.Quantity, hasReq bool, lim resource.Quantity, hasLim bool) bool {
	if !hasReq || !hasLim || req.Sign() == 0 || lim.Sign() == 0 {
		return true
	}
	// limit*1000 > ratio*request in milli-units, with a part in 10^12 of
	// slack: 10^12 * limit*1000 > (10^12+1) * ratio*request.
	scale := big.NewInt(1_000_000_000_000)
	lhs := new(big.Int).Mul(big.NewInt(lim.MilliValue()), big.NewInt(1000))
	lhs.Mul(lhs, scale)
	rhs := new(big.Int).Mul(big.NewInt(ratio.MilliValue()), big.NewInt(req.MilliValue()))
	rhs.Mul(rhs, scale.Add(scale, big.NewInt(1)))
	return lhs.Cmp(rhs) > 0
}

func show(q resource.Quantity, ok bool) string {
	if !ok {
		return "none"
	}
	return q.String()
}
