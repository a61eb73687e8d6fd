package newpods

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// AdmitInput is what Admit plans a workload's new pods from.
type AdmitInput struct {
	// Template is the workload's pod template, as its controller creates
	// pods from it.
	Template *corev1.PodTemplateSpec
	Spec     *v1alpha1.TailorPolicySpec
	// Targets are the workload's recommendations by container name
	// (status.recommendation's target); a container without one keeps its
	// template's resources.
	Targets map[string]podchange.Target
	Server  resize.Version
	Now     time.Time
	// Holds are the requests an HPA divides by: new pods keep them too.
	Holds ownership.Holds
	// Boost is the policy's startupBoost: new pods start boosted.
	Boost *v1alpha1.StartupBoost
	// Room is the most of each resource a new pod may request and still
	// find a node (NewPodRoom): raises are cut to it, as an in-place raise
	// is cut to its node's room, so no pod is created that no node could
	// hold. Nil: unknown, no cut.
	Room corev1.ResourceList
	// Rules are the namespace's LimitRanges and ResourceQuotas. The
	// template is planned as the LimitRanger admits it (its defaults
	// applied: what the admission policy sees, and what decides the new
	// pod's QoS class), each value clamped into the LimitRanges, a raise
	// cut to what the quotas have left for Replicas pods of it, and an
	// entry the apiserver would still refuse is not written. Nil: none.
	Rules *nsrules.Rules
	// Replicas is how many new pods a rollout of the workload creates at
	// the entry's size (its pods now, at least one): a quota must hold the
	// raise for each.
	Replicas int
}

// Admitted is what a new pod of the workload is created with.
type Admitted struct {
	// Containers are the containers that differ from the template, all of
	// them or none (a pod part-changed could land in another QoS class).
	Containers []v1alpha1.AdmittedContainer
	// Summary says what changes, for the pod's annotation.
	Summary string
	// Held says why new pods keep their template's size; empty when they
	// do not, or when the template already matches the recommendation.
	Held string
	// Boost is the value of the pod's BoostAnnotation: each boosted
	// container's CPU request. Empty without a boost.
	Boost string
	// NotBoosted says which containers a boost leaves alone, and why.
	NotBoosted []string
}

// ApplyOnCreate reports whether the policy sizes new pods at admission.
func ApplyOnCreate(spec *v1alpha1.TailorPolicySpec) bool {
	if spec.Mode() == v1alpha1.UpdateModeOff {
		return false
	}
	u := spec.UpdatePolicy
	return u == nil || u.ApplyOnCreate == nil || *u.ApplyOnCreate
}

// Admit plans the resources a new pod of the template is created with: the
// recommendation, shaped by the same rules as an in-place resize (bounds,
// QoS class kept, limits at the ratio the template has or left alone, no
// limit added), with what only a running pod needs left out: no step
// limits or tolerance (the pod starts at its target), no working-set floor
// (nothing runs yet), and no resize policy (nothing is restarted). The
// result is then checked by the resize planner, as a resize from the
// template's size would be.
func Admit(in AdmitInput) (Admitted, error) {
	var out Admitted
	if in.Template == nil || in.Spec == nil {
		return out, fmt.Errorf("admit: template and policy are required")
	}
	if !ApplyOnCreate(in.Spec) {
		out.Held = "new pods are not sized at creation: updateMode is Off or applyOnCreate is false"
		return out, nil
	}
	pod := &corev1.Pod{ObjectMeta: *in.Template.ObjectMeta.DeepCopy(), Spec: *in.Template.Spec.DeepCopy()}
	if in.Rules != nil {
		pod = in.Rules.Admitted(pod)
	}
	if podchange.HasPodLevel(pod) {
		out.Held = "the template has pod-level resources: new pods start at its size and are resized in place once running"
		return out, nil
	}
	targets := map[string]podchange.Target{}
	for name, t := range in.Targets {
		// A container the template no longer has (renamed, removed) is
		// not one a new pod needs sizing for.
		if podcontainers.Named(pod, name) != nil {
			targets[name] = t
		}
	}
	boosted := in.boost(pod, targets)
	out.NotBoosted = boosted.not
	if len(targets) == 0 {
		return out, nil
	}
	replicas := max(in.Replicas, 1)
	d, err := podchange.Decide(podchange.Input{Pod: pod, Spec: in.Spec, Targets: targets, Now: in.Now, Creating: true, Holds: in.Holds, Boost: boosted.names,
		Room: resize.LeastRoom(roomBeside(pod, in.Room), quotaRoomPerReplica(in.Rules, pod, replicas)), Rules: in.Rules})
	if err != nil {
		return out, fmt.Errorf("admit: %w", err)
	}
	if len(d.Changes) == 0 {
		return out, nil
	}
	plan, err := resize.Plan(resize.Input{Pod: pod, Desired: d.Desired, Server: in.Server})
	if err != nil {
		return out, fmt.Errorf("admit: %w", err)
	}
	if plan.Outcome == resize.Refused {
		out.Held = fmt.Sprintf("new pods start at their template's size: the recommended size breaks rule %s (%s)", plan.Rule, plan.Message)
		return out, nil
	}
	if why := refusedBeyondTemplate(in.Rules, plan.AfterPod(), pod, replicas); why != "" {
		out.Held = "new pods start at their template's size: the apiserver would refuse them at the recommended size: " + why
		return out, nil
	}
	names := make([]string, 0, len(d.Desired.Containers))
	for n := range d.Desired.Containers {
		names = append(names, n)
	}
	sort.Strings(names)
	var summary []string
	for _, n := range names {
		c := podcontainers.Named(pod, n)
		want := d.Desired.Containers[n]
		ac := v1alpha1.AdmittedContainer{Name: n}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			SetEntry(&ac.TemplateRequests, r, c.Resources.Requests)
			SetEntry(&ac.TemplateLimits, r, c.Resources.Limits)
			SetEntry(&ac.Requests, r, want.Requests, c.Resources.Requests)
			SetEntry(&ac.Limits, r, want.Limits, c.Resources.Limits)
		}
		out.Containers = append(out.Containers, ac)
		var parts []string
		for _, ch := range d.Changes {
			if ch.Container != n {
				continue
			}
			s := fmt.Sprintf("%s %s->%s", ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String())
			if ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) != 0 {
				s += fmt.Sprintf(" (limit %s->%s)", ch.LimitBefore.String(), ch.LimitNow.String())
			}
			for _, n := range ch.Notes {
				// Which of the namespace's objects shaped it: the status
				// says what caps new pods.
				if strings.Contains(n, "LimitRange") {
					s += " (" + n + ")"
				}
			}
			parts = append(parts, s)
		}
		summary = append(summary, n+": "+strings.Join(parts, ", "))
	}
	out.Summary = strings.Join(summary, "; ")
	if len(d.Short) > 0 {
		out.Summary += " (cut to what a node could hold)"
	}
	if len(boosted.names) > 0 {
		// What each boosted container is created with, as the decision
		// shaped it (maxAllowed, QoS): the value to take back once started.
		values := map[string]resource.Quantity{}
		for n := range boosted.names {
			c := podcontainers.Named(pod, n)
			q := c.Resources.Requests[corev1.ResourceCPU]
			if want, ok := d.Desired.Containers[n].Requests[corev1.ResourceCPU]; ok {
				q = want
			}
			values[n] = q
		}
		out.Boost = boost.Text(values)
		out.Summary += " (startup boost: " + out.Boost + ")"
	}
	return out, nil
}

// SizeTemplate plans the pod template a workload's manifest needs for its
// new pods to start at the recommendation with no admission policy: what
// Admit gives a new pod of the template (bounds, QoS class kept, limits at
// the template's ratio under RequestsAndLimits or left alone under
// RequestsOnly, no limit added, the namespace's rules), whatever the
// policy's updateMode and applyOnCreate say, since a change taken through
// the manifest is its owner's to make, and without a startup boost, which a
// running pod gives back and a template would keep. The template is read
// as the apiserver admits a pod of it (requests defaulted from limits, then
// the LimitRanges' defaults), so Rules nil is a namespace without any.
func SizeTemplate(in AdmitInput) (Admitted, error) {
	if in.Spec == nil {
		return Admitted{}, fmt.Errorf("size template: a policy spec is required (an empty one takes the defaults)")
	}
	spec := in.Spec.DeepCopy()
	up := v1alpha1.UpdatePolicy{}
	if spec.UpdatePolicy != nil {
		up = *spec.UpdatePolicy
	}
	yes := true
	up.UpdateMode, up.ApplyOnCreate = v1alpha1.UpdateModeInPlace, &yes
	spec.UpdatePolicy, spec.StartupBoost = &up, nil
	in.Spec, in.Boost = spec, nil
	if in.Rules == nil {
		in.Rules = &nsrules.Rules{}
	}
	return Admit(in)
}

// refusedBeyondTemplate says what the namespace's rules would refuse of a new
// pod created as entry that they would not refuse of it created as template:
// what refuses the template's own pod is not tailor's to answer. The quotas
// are charged for the entry's raise over the template on every other replica
// first. "" when nothing.
func refusedBeyondTemplate(rules *nsrules.Rules, entry, template *corev1.Pod, replicas int) string {
	if rules == nil {
		return ""
	}
	already := map[string]bool{}
	for _, v := range rules.Violations(template, nil) {
		already[v.Object+"/"+v.Container+"/"+string(v.Resource)] = true
	}
	charged := rules.Charged(entry, template, replicas-1)
	for _, v := range charged.Violations(rules.Admitted(entry), nil) {
		if !already[v.Object+"/"+v.Container+"/"+string(v.Resource)] {
			return fmt.Sprintf("%s (%s)", v.Message, v.Object)
		}
	}
	return ""
}

// quotaRoomPerReplica is how much more than its template each replica may
// request under the quotas: a rollout creates that many at the entry's size.
func quotaRoomPerReplica(rules *nsrules.Rules, pod *corev1.Pod, replicas int) corev1.ResourceList {
	if rules == nil {
		return nil
	}
	room := rules.RequestRoom(pod)
	// The new pod is charged whole: what is left beyond its template's
	// requests is what the raises of all replicas share.
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for r, q := range room {
		q.Sub(reqs[r])
		if q.Sign() < 0 {
			q = resource.Quantity{Format: q.Format}
		}
		if r == corev1.ResourceCPU {
			room[r] = *resource.NewMilliQuantity(q.MilliValue()/int64(replicas), q.Format)
		} else {
			room[r] = *resource.NewQuantity(q.Value()/int64(replicas), q.Format)
		}
	}
	return room
}

// roomBeside is how much more than the template's pod a new pod may request
// within room: room less the template's requests, never below zero.
func roomBeside(pod *corev1.Pod, room corev1.ResourceList) corev1.ResourceList {
	if room == nil {
		return nil
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	out := corev1.ResourceList{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := room[r]
		if !ok {
			// No node says how much of it there is: a zero room would
			// forbid every raise of it.
			return nil
		}
		q = q.DeepCopy()
		q.Sub(reqs[r])
		if q.Sign() < 0 {
			q = resource.Quantity{Format: q.Format}
		}
		out[r] = q
	}
	return out
}

type boosted struct {
	names map[string]bool
	not   []string
}

// boost raises the cpu targets of the pod's boostable containers to the
// boost, from the recommendation or, before there is one, the template's
// request.
func (in AdmitInput) boost(pod *corev1.Pod, targets map[string]podchange.Target) boosted {
	var out boosted
	if in.Boost == nil {
		return out
	}
	out.names = map[string]bool{}
	for _, c := range podcontainers.Running(&pod.Spec) {
		pol, err := in.Spec.PolicyFor(c.Name)
		if err != nil {
			continue
		}
		if why := boost.Boostable(c, pol); why != "" {
			out.not = append(out.not, fmt.Sprintf("container %s is not boosted: %s", c.Name, why))
			continue
		}
		if in.Holds.Holds(c.Name, corev1.ResourceCPU) {
			out.not = append(out.not, fmt.Sprintf("container %s is not boosted: a HorizontalPodAutoscaler divides by its cpu request", c.Name))
			continue
		}
		t := targets[c.Name]
		base := c.Resources.Requests[corev1.ResourceCPU]
		if t.CPU != nil {
			base = *t.CPU
		}
		q := boost.CPU(base, in.Boost)
		t.CPU = &q
		targets[c.Name] = t
		out.names[c.Name] = true
	}
	sort.Strings(out.not)
	return out
}

// SetEntry copies resource r into *dst from the first list that has it.
func SetEntry(dst *corev1.ResourceList, r corev1.ResourceName, from ...corev1.ResourceList) {
	for _, l := range from {
		if q, ok := l[r]; ok {
			if *dst == nil {
				*dst = corev1.ResourceList{}
			}
			(*dst)[r] = q.DeepCopy()
			return
		}
	}
}
