package autoscale

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// DefaultBoostDuration is startupBoost.duration when unset.
const DefaultBoostDuration = 30 * time.Second

// MaxBoost bounds a boost whose pod never becomes Ready (a readiness probe
// that never passes, a condition nothing sets): it ends this long after the
// last of the pod's containers started, so a broken pod does not keep CPU
// it was lent.
const MaxBoost = 10 * time.Minute

// Starting reports whether p is in the boosted start of its life: its
// containers started less than MaxBoost ago and the pod is not Ready (or
// the boost's condition is not True), or turned so less than the boost's
// duration ago. A container restart makes the pod not Ready again, so a
// crash loop is boosted too. It also returns when the start ends, when
// known, for the next sync to come then.
func Starting(p *corev1.Pod, b *v1alpha1.StartupBoost, now time.Time) (bool, time.Time) {
	if b == nil || p == nil {
		return false, time.Time{}
	}
	var started time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if r := cs.State.Running; r != nil && r.StartedAt.After(started) {
			started = r.StartedAt.Time
		}
	}
	if started.IsZero() && p.Status.StartTime != nil {
		started = p.Status.StartTime.Time
	}
	giveUp := started.Add(MaxBoost)
	if !started.IsZero() && !now.Before(giveUp) {
		return false, time.Time{}
	}
	typ := corev1.PodReady
	if b.Condition != "" {
		typ = corev1.PodConditionType(b.Condition)
	}
	d := DefaultBoostDuration
	if b.Duration != nil {
		d = b.Duration.Duration
	}
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			// Ready (or the condition) before the last container started
			// is stale: the kubelet has not yet seen the restart.
			if c.LastTransitionTime.Time.Before(started) {
				break
			}
			end := c.LastTransitionTime.Add(d)
			return now.Before(end), end
		}
	}
	if started.IsZero() {
		return true, time.Time{}
	}
	return true, giveUp
}

// BoostedCPU is the CPU request a container asking base gets while boosted.
func BoostedCPU(base resource.Quantity, b *v1alpha1.StartupBoost) resource.Quantity {
	if b.FactorPercent != nil {
		return *resource.NewMilliQuantity((base.MilliValue()*int64(*b.FactorPercent)+99)/100, resource.DecimalSI)
	}
	if b.CPU != nil && b.CPU.Cmp(base) > 0 {
		return b.CPU.DeepCopy()
	}
	return base.DeepCopy()
}

// Boostable says why a container may not be boosted, or "" when it may: a
// boost is removed in place, which must not restart it, and it must have a
// CPU request to raise.
func Boostable(c *corev1.Container, pol v1alpha1.ContainerPolicy) string {
	switch {
	case pol.Mode != nil && *pol.Mode == v1alpha1.ContainerModeOff:
		return "its containerPolicy mode is Off"
	case !controls(pol, corev1.ResourceCPU):
		return "the policy does not control its cpu"
	case restartsFor(c, corev1.ResourceCPU):
		return "its cpu resizePolicy is RestartContainer: removing the boost would restart it"
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		return "it declares no cpu request"
	}
	return ""
}

// BoostText is the value of the pod annotation BoostAnnotation: each
// boosted container's CPU request, sorted by name.
func BoostText(boosted map[string]resource.Quantity) string {
	names := make([]string, 0, len(boosted))
	for n := range boosted {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := boosted[n]
		parts = append(parts, n+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// ParseBoostText reads BoostText back; a pod annotated by hand with
// anything else is an error, and gets no boost removed.
func ParseBoostText(s string) (map[string]resource.Quantity, error) {
	out := map[string]resource.Quantity{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("startup boost annotation %q: %q is not name=cpu", s, part)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("startup boost annotation %q: %w", s, err)
		}
		out[name] = q
	}
	return out, nil
}
