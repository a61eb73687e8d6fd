package boost

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// DefaultDuration is startupBoost.duration when unset.
const DefaultDuration = 30 * time.Second

// MaxDuration bounds a boost whose pod never becomes Ready (a readiness probe
// that never passes, a condition nothing sets): it ends this long after the
// last of the pod's containers started, so a broken pod does not keep CPU
// it was lent.
const MaxDuration = 10 * time.Minute

// Starting reports whether p is in the boosted start of its life: its
// containers started less than MaxDuration ago and the pod is not Ready (or
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
	giveUp := started.Add(MaxDuration)
	if !started.IsZero() && !now.Before(giveUp) {
		return false, time.Time{}
	}
	typ := corev1.PodReady
	if b.Condition != "" {
		typ = corev1.PodConditionType(b.Condition)
	}
	d := DefaultDuration
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

// CPU is the CPU request a container asking base gets while boosted.
func CPU(base resource.Quantity, b *v1alpha1.StartupBoost) resource.Quantity {
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
	case !podchange.Controls(pol, corev1.ResourceCPU):
		return "the policy does not control its cpu"
	case podchange.RestartsFor(c, corev1.ResourceCPU):
		return "its cpu resizePolicy is RestartContainer: removing the boost would restart it"
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		return "it declares no cpu request"
	}
	return ""
}

// Text is the value of the pod annotation BoostAnnotation: each
// boosted container's CPU request, sorted by name.
func Text(boosted map[string]resource.Quantity) string {
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

// ParseText reads Text back; a pod annotated by hand with
// anything else is an error, and gets no boost removed.
func ParseText(s string) (map[string]resource.Quantity, error) {
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

// FieldManager is the field manager tailor's in-place boosts are sent
// under (tailor's other resizes go under actuator.FieldManager). The
// apiserver gives a field to the last manager that changed it, so while
// this manager's pods/resize entry in the pod's managedFields owns a
// container's cpu request, that request is still the boost's, whatever it
// reached (the node's room may have cut it); once tailor (or anyone) sets
// it again, the entry loses it. The pod itself so says what is lent: a
// restarted manager, or a new leader, reads it back.
const FieldManager = "tailor-startup-boost"

// Input is what the startup boost of one pod is decided from: the pod
// (its status says whether it starts, its annotation and managedFields
// which cpu requests are boosts), the policy, and the time.
type Input struct {
	Pod  *corev1.Pod
	Spec *v1alpha1.TailorPolicySpec
	// Base is the CPU request a container has without a boost (the
	// recommendation, or the template's request before there is one);
	// false when nothing says.
	Base func(container string) (resource.Quantity, bool)
	// Holds are the requests a HorizontalPodAutoscaler divides by: their
	// cpu is never boosted.
	Holds ownership.Holds
	// FieldManager is the field manager of tailor's other resizes
	// (actuator.FieldManager): a cpu request it owns is no longer what the
	// pod was admitted with.
	FieldManager string
	Now          time.Time
}

// Target is what the boost does to one container's cpu request.
type Target struct {
	// CPU is the request to go straight to (no step limits, stabilization
	// or tolerance); nil holds it as it is.
	CPU *resource.Quantity
	// Raise: CPU is a boost given, to be sent under FieldManager;
	// otherwise it is one taken back.
	Raise bool
}

// Decision is the startup boost's say over a pod's cpu requests.
type Decision struct {
	// Containers are those whose cpu the boost decides; the others are
	// sized as usual.
	Containers map[string]Target
	// Boosted names the containers whose cpu request is a boost now (by
	// the admission annotation or in place).
	Boosted map[string]bool
	// NotBoosted says which containers are never boosted, and why, sorted.
	NotBoosted []string
}

// Targets decides a pod's startup boost from the pod alone:
//
//   - while the pod starts, a container below its boost is raised to it in
//     place (a pod created without it, a restarted container, a boost the
//     node's room cut), and one at or above it is held: nothing lowers a
//     starting pod's CPU;
//   - once started, a container whose cpu request is still a boost (set by
//     the admission that annotated the pod and not by tailor since, or set
//     by an in-place boost, FieldManager, and by no one since) and
//     above its base goes straight back to the base, whatever the boost
//     reached: the boost was lent, not learnt. A request tailor set after
//     the start (a raise for real usage) is its own and is left to the
//     usual path.
//
// A container whose base is unknown is boosted from its request and, once
// started, keeps its boost until a base is known.
func Targets(in Input) Decision {
	out := Decision{Containers: map[string]Target{}, Boosted: map[string]bool{}}
	b := in.Spec.StartupBoost
	if b == nil || in.Pod == nil {
		return out
	}
	p := in.Pod
	starting, _ := Starting(p, b, in.Now)
	admitted, err := ParseText(p.Annotations[v1alpha1.BoostAnnotation])
	if err != nil {
		// A hand-written annotation takes back nothing.
		admitted = nil
	}
	inPlace := cpuSetBy(p, FieldManager)
	resized := cpuSetBy(p, in.FieldManager)
	for _, c := range podcontainers.Running(&p.Spec) {
		name := c.Name
		pol, err := in.Spec.PolicyFor(name)
		if err != nil {
			continue
		}
		if why := Boostable(c, pol); why != "" {
			out.NotBoosted = append(out.NotBoosted, fmt.Sprintf("container %s is not boosted: %s", name, why))
			continue
		}
		if in.Holds.Holds(name, corev1.ResourceCPU) {
			out.NotBoosted = append(out.NotBoosted, fmt.Sprintf("container %s is not boosted: a HorizontalPodAutoscaler divides by its cpu request", name))
			continue
		}
		_, wasAdmitted := admitted[name]
		boosted := inPlace[name] || (wasAdmitted && !resized[name])
		if boosted {
			out.Boosted[name] = true
		}
		cur := c.Resources.Requests[corev1.ResourceCPU]
		var base resource.Quantity
		known := false
		if in.Base != nil {
			base, known = in.Base(name)
		}
		switch {
		case starting:
			if !known {
				base = cur
			}
			want := CPU(base, b)
			if cur.Cmp(want) < 0 {
				out.Containers[name] = Target{CPU: &want, Raise: true}
			} else {
				out.Containers[name] = Target{}
			}
		case boosted && known && cur.Cmp(base) > 0:
			out.Containers[name] = Target{CPU: &base}
		case boosted && !known:
			// Nothing says what to go back to: held until something does.
			out.Containers[name] = Target{}
		}
	}
	sort.Strings(out.NotBoosted)
	return out
}

// cpuSetBy names the containers whose cpu request manager's pods/resize
// entry in p's managedFields owns: it was the last to change it.
func cpuSetBy(p *corev1.Pod, manager string) map[string]bool {
	out := map[string]bool{}
	for _, mf := range p.ManagedFields {
		if mf.Manager != manager || mf.Subresource != "resize" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]map[string]struct {
				Resources struct {
					Requests map[string]json.RawMessage `json:"f:requests"`
				} `json:"f:resources"`
			} `json:"f:spec"`
		}
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			// Not what the apiserver writes: it proves nothing.
			continue
		}
		for list, items := range fields.Spec {
			if list != "f:containers" && list != "f:initContainers" {
				continue
			}
			for key, item := range items {
				var id struct {
					Name string `json:"name"`
				}
				k, ok := strings.CutPrefix(key, "k:")
				if !ok || json.Unmarshal([]byte(k), &id) != nil || id.Name == "" {
					continue
				}
				if _, ok := item.Resources.Requests["f:cpu"]; ok {
					out[id.Name] = true
				}
			}
		}
	}
	return out
}

// Gives says whether d raises the cpu request of a container whose
// target is a boost given (Target.Raise): the resize is then sent
// under FieldManager, so the pod records which requests are lent.
func Gives(d podchange.Decision, raise map[string]bool) bool {
	for _, ch := range d.Changes {
		if ch.Resource == corev1.ResourceCPU && raise[ch.Container] && ch.RequestNow.Cmp(ch.RequestBefore) > 0 {
			return true
		}
	}
	return false
}
