package nsrulestest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gen draws from R. PriorityClasses are the classes pods and quota scopes
// may name (the apiserver refuses a pod naming a class that does not exist).
type Gen struct {
	R               *rand.Rand
	PriorityClasses []string
	// SharedDefaults lets two LimitRanges default the same resource of a
	// container. The apiserver then picks by its cache's order, which an oracle
	// cannot predict; a property test wants the overlap.
	SharedDefaults bool
}

var sized = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// Quantity is a random amount of res: 10m steps of cpu up to 4, 16Mi steps
// of memory up to 4Gi.
func (g Gen) Quantity(res corev1.ResourceName) resource.Quantity {
	if res == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(10*(1+g.R.Int64N(400)), resource.DecimalSI)
	}
	return *resource.NewQuantity((1+g.R.Int64N(256))*16<<20, resource.BinarySI)
}

// LimitRanges are zero to two LimitRanges, valid as ValidateLimitRange
// wants them, with Container and Pod items for cpu and memory, and now and
// then an item or resource nsrules must ignore.
func (g Gen) LimitRanges() []corev1.LimitRange {
	n := g.R.IntN(3)
	out := make([]corev1.LimitRange, n)
	for i := range out {
		out[i] = corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("lr-%d", i)}}
	}
	for _, res := range sized {
		// Which LimitRanges constrain res in a Container item.
		for i := range out {
			if g.R.IntN(2) == 0 {
				continue
			}
			if !g.SharedDefaults && g.hasContainer(out, res) {
				continue
			}
			g.addContainer(&out[i], res)
		}
		for i := range out {
			if g.R.IntN(3) == 0 {
				g.addPod(&out[i], res)
			}
		}
	}
	for i := range out {
		if g.R.IntN(5) == 0 {
			out[i].Spec.Limits = append(out[i].Spec.Limits, corev1.LimitRangeItem{
				Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			})
		}
		if len(out[i].Spec.Limits) == 0 {
			// An empty LimitRange is valid and defaults nothing.
			out[i].Spec.Limits = []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer}}
		}
	}
	return out
}

func (g Gen) hasContainer(lrs []corev1.LimitRange, res corev1.ResourceName) bool {
	for _, lr := range lrs {
		for _, it := range lr.Spec.Limits {
			if it.Type == corev1.LimitTypeContainer && (has(it.Min, res) || has(it.Max, res) || has(it.Default, res) || has(it.DefaultRequest, res)) {
				return true
			}
		}
	}
	return false
}

func has(l corev1.ResourceList, res corev1.ResourceName) bool { _, ok := l[res]; return ok }

func item(lr *corev1.LimitRange, t corev1.LimitType) *corev1.LimitRangeItem {
	for i := range lr.Spec.Limits {
		if lr.Spec.Limits[i].Type == t {
			return &lr.Spec.Limits[i]
		}
	}
	lr.Spec.Limits = append(lr.Spec.Limits, corev1.LimitRangeItem{Type: t})
	return &lr.Spec.Limits[len(lr.Spec.Limits)-1]
}

func set(l *corev1.ResourceList, res corev1.ResourceName, q resource.Quantity) {
	if *l == nil {
		*l = corev1.ResourceList{}
	}
	(*l)[res] = q
}

// addContainer gives lr's Container item a random subset of min <=
// defaultRequest <= default <= max for res, and maybe a ratio.
func (g Gen) addContainer(lr *corev1.LimitRange, res corev1.ResourceName) {
	it := item(lr, corev1.LimitTypeContainer)
	vals := []resource.Quantity{g.Quantity(res), g.Quantity(res), g.Quantity(res), g.Quantity(res)}
	slices.SortFunc(vals, func(a, b resource.Quantity) int { return a.Cmp(b) })
	if g.R.IntN(2) == 0 {
		set(&it.Min, res, vals[0])
	}
	if g.R.IntN(3) == 0 {
		set(&it.DefaultRequest, res, vals[1])
	}
	if g.R.IntN(3) == 0 {
		set(&it.Default, res, vals[2])
	}
	if g.R.IntN(2) == 0 {
		set(&it.Max, res, vals[3])
	}
	if g.R.IntN(3) == 0 {
		g.addRatio(it, res)
	}
	if g.R.IntN(6) == 0 {
		set(&it.Max, corev1.ResourceEphemeralStorage, resource.MustParse("100Gi"))
	}
}

// addRatio is a ratio from 1 to 4 in steps of 0.25, no more than max/min
// (ValidateLimitRange refuses a ratio that no value between them can meet).
func (g Gen) addRatio(it *corev1.LimitRangeItem, res corev1.ResourceName) {
	ratio := 1000 + 250*g.R.Int64N(13)
	if lo, ok := it.Min[res]; ok {
		if hi, ok := it.Max[res]; ok {
			for ratio > 1000 && float64(ratio)/1000 > float64(hi.MilliValue())/float64(lo.MilliValue()) {
				ratio -= 250
			}
		}
	}
	set(&it.MaxLimitRequestRatio, res, *resource.NewMilliQuantity(ratio, resource.DecimalSI))
}

func (g Gen) addPod(lr *corev1.LimitRange, res corev1.ResourceName) {
	it := item(lr, corev1.LimitTypePod)
	a, b := g.Quantity(res), g.Quantity(res)
	// A pod's sums are larger than a container's: scale up.
	a.Add(a)
	b.Add(b)
	b.Add(b)
	if a.Cmp(b) > 0 {
		a, b = b, a
	}
	switch g.R.IntN(4) {
	case 0:
		set(&it.Min, res, a)
	case 1:
		set(&it.Max, res, b)
	case 2:
		set(&it.Min, res, a)
		set(&it.Max, res, b)
	case 3:
		g.addRatio(it, res)
	}
}

var quotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// Quotas are zero to two quotas on cpu and memory with their status set as
// the quota controller would have (hard copied, used below or near hard),
// with random scopes; now and then one the controller has not processed, or
// one that does not say what is used.
func (g Gen) Quotas() []corev1.ResourceQuota {
	n := g.R.IntN(3)
	out := make([]corev1.ResourceQuota, n)
	for i := range out {
		q := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("quota-%d", i)}}
		hard, used := corev1.ResourceList{}, corev1.ResourceList{}
		for _, res := range quotaResources {
			if g.R.IntN(3) != 0 {
				continue
			}
			base := corev1.ResourceCPU
			if res == corev1.ResourceMemory || res == corev1.ResourceRequestsMemory || res == corev1.ResourceLimitsMemory {
				base = corev1.ResourceMemory
			}
			h := g.Quantity(base)
			h.Add(h)
			u := g.Quantity(base)
			if u.Cmp(h) > 0 {
				u = h.DeepCopy()
			}
			hard[res], used[res] = h, u
		}
		if g.R.IntN(4) == 0 {
			hard[corev1.ResourcePods], used[corev1.ResourcePods] = resource.MustParse("100"), resource.MustParse("1")
		}
		if len(hard) == 0 {
			hard[corev1.ResourceLimitsCPU], used[corev1.ResourceLimitsCPU] = resource.MustParse("8"), resource.MustParse("1")
		}
		q.Spec.Hard = hard
		switch g.R.IntN(12) {
		case 0: // not yet processed by the quota controller
		case 1: // used missing for one resource
			q.Status.Hard = hard.DeepCopy()
			q.Status.Used = used.DeepCopy()
			for _, res := range quotaResources {
				if _, ok := q.Status.Used[res]; ok {
					delete(q.Status.Used, res)
					break
				}
			}
		default:
			q.Status.Hard, q.Status.Used = hard.DeepCopy(), used
		}
		g.addScope(&q)
		out[i] = q
	}
	return out
}

func (g Gen) addScope(q *corev1.ResourceQuota) {
	switch g.R.IntN(7) {
	case 0:
		q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
	case 1:
		q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	case 2:
		q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}
	case 3:
		if len(g.PriorityClasses) == 0 {
			return
		}
		ops := []corev1.ScopeSelectorOperator{corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn, corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist}
		s := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: ops[g.R.IntN(len(ops))]}
		if s.Operator == corev1.ScopeSelectorOpIn || s.Operator == corev1.ScopeSelectorOpNotIn {
			s.Values = []string{g.PriorityClasses[g.R.IntN(len(g.PriorityClasses))]}
		}
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{s}}
	}
}

// Pod is a pod of one to three containers and up to two init containers
// (sidecars among them), each setting any of request and limit of cpu and
// memory (request <= limit where both are set), maybe with a deadline (the
// Terminating scope) and a priority class.
func (g Gen) Pod(name string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways},
	}
	for i := range 1 + g.R.IntN(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, g.container(fmt.Sprintf("c%d", i)))
	}
	for i := range g.R.IntN(3) {
		c := g.container(fmt.Sprintf("i%d", i))
		if g.R.IntN(2) == 0 {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	if g.R.IntN(4) == 0 {
		d := int64(600)
		pod.Spec.ActiveDeadlineSeconds = &d
	}
	if len(g.PriorityClasses) > 0 && g.R.IntN(3) == 0 {
		pod.Spec.PriorityClassName = g.PriorityClasses[g.R.IntN(len(g.PriorityClasses))]
	}
	return pod
}

func (g Gen) container(name string) corev1.Container {
	c := corev1.Container{Name: name, Image: "registry.k8s.io/pause:3.10"}
	for _, res := range sized {
		a, b := g.Quantity(res), g.Quantity(res)
		if a.Cmp(b) > 0 {
			a, b = b, a
		}
		switch g.R.IntN(5) {
		case 1:
			set(&c.Resources.Requests, res, a)
		case 2:
			set(&c.Resources.Limits, res, b)
		case 3, 4:
			set(&c.Resources.Requests, res, a)
			set(&c.Resources.Limits, res, b)
		}
	}
	return c
}
