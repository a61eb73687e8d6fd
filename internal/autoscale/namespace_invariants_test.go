package autoscale_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
)

// checkNamespaced holds the namespace's promises on one case (issue #23):
// every resize DecidePolicy chose, the admission entry Admit plans for the
// first pod's template, and every recreation entry DecideRecreate records.
func checkNamespaced(c autoscaletest.NamespacedCase, d fleet.PolicyDecision, stats map[string]int) string {
	if r := c.Rules; r != nil && len(r.LimitRanges)+len(r.Quotas) > 0 {
		stats["withRules"]++
	}
	for _, h := range d.Held {
		if h.Reason == fleet.HoldNamespaceRules {
			stats["nsHeld"]++
		}
	}
	if msg := checkResizesAdmitted(c.Rules, c.Server, d, stats); msg != "" {
		return msg
	}
	// Without rules, a room or a boost, Admit is TestAdmitInvariants' and
	// DecideRecreate TestDecideRecreate's: left to them, which keeps this
	// fuzz quick under -race.
	if c.Rules != nil || c.Room != nil || c.Boost != nil {
		if msg := checkAdmissionEntry(c, stats); msg != "" {
			return "admission entry: " + msg
		}
	}
	if c.Rules == nil {
		return ""
	}
	return checkRecreations(c, stats)
}

// checkResizesAdmitted: the apiserver lets every resize through, judged
// against the quotas as the resizes before it in the sync left them, and
// the LimitRanger's defaults (which it applies to a resize too) change no
// pod's QoS class; and the one engine, asked afresh with those rules,
// accepts it. Refusals are judged twice: by the engine, and by
// nsrulestest.Reference, which states the LimitRange and quota rules apart
// from it, so a rule the engine gets wrong fails here even though the
// decision asked the same engine.
func checkResizesAdmitted(r *nsrules.Rules, server resize.Version, d fleet.PolicyDecision, stats map[string]int) string {
	if r == nil {
		return ""
	}
	rules := *r
	ref := nsrulestest.NewReference(r.LimitRanges, r.Quotas)
	for _, a := range d.Resizes {
		before := a.Pod
		after := rules.Admitted(a.Plan.AfterPod())
		if v := rules.Violations(after, before); len(v) > 0 {
			return fmt.Sprintf("pod %s: the apiserver would refuse the resize: %s (%s)\npod: %s\nresized: %s", before.Name, v[0].Message, v[0].Object, podText(before), podText(after))
		}
		if why := ref.Refusals(after, before); len(why) > 0 {
			return fmt.Sprintf("pod %s: the engine accepts a resize the rules refuse: %s\npod: %s\nresized: %s", before.Name, why[0], podText(before), podText(after))
		}
		ref.Charge(after, before)
		if b, n := qosutil.ComputePodQOS(before), qosutil.ComputePodQOS(after); b != n {
			return fmt.Sprintf("pod %s: QoS %s -> %s once the LimitRanger defaults the resize\npod: %s\nresized: %s", before.Name, b, n, podText(before), podText(after))
		}
		plan, err := resize.Plan(resize.Input{Pod: before, Desired: a.Decision.Desired, Server: server, Rules: &rules})
		if err != nil {
			return fmt.Sprintf("pod %s: Plan: %v", before.Name, err)
		}
		if plan.Outcome != resize.Accepted {
			return fmt.Sprintf("pod %s: the engine refuses the resize (rule %s): %s\npod: %s\nresized: %s", before.Name, plan.Rule, plan.Message, podText(before), podText(after))
		}
		rules = rules.Charged(after, before, 1)
		stats["nsResizes"]++
		if noted(a.Decision, "LimitRange") {
			stats["clamped"]++
		}
	}
	return ""
}

// checkAdmissionEntry: the admission entry Admit plans for the first pod's
// template passes checkEntry.
func checkAdmissionEntry(c autoscaletest.NamespacedCase, stats map[string]int) string {
	template := c.Templates[0]
	spec := c.Spec.DeepCopy()
	spec.StartupBoost = c.Boost
	got, err := newpods.Admit(newpods.AdmitInput{Template: template, Spec: spec, Targets: c.Pods[0].Targets, Server: c.Server, Now: c.Now,
		Holds: c.Holds, Boost: c.Boost, Room: c.Room, Rules: c.Rules, Replicas: c.Replicas})
	if err != nil {
		return err.Error()
	}
	if strings.Contains(got.Held, "apiserver would refuse") {
		stats["entriesHeld"]++
	}
	if got.Boost != "" && len(got.Containers) > 0 {
		stats["boosted"]++
	}
	_, msg := checkEntry(c.Rules, template, got.Containers, got.Summary, c.Room, c.Replicas, stats)
	return msg
}

// checkEntry: a new pod created from the template with the admission entry
// (LimitRange defaults, then the entry, as the apiserver applies them) is
// refused for nothing its template's own pod is not refused for, with the
// quotas charged for the raise of every other replica; it keeps the QoS
// class the template's pod is admitted with, and requests no more than the
// room a node has (or its template's requests, where those are more). It
// returns the pod as created, and what is wrong with it ("": nothing).
func checkEntry(rules *nsrules.Rules, template *corev1.PodTemplateSpec, entry []v1alpha1.AdmittedContainer, summary string,
	room corev1.ResourceList, replicas int, stats map[string]int) (*corev1.Pod, string) {
	if len(entry) == 0 {
		return nil, ""
	}
	stats["entries"]++
	asTemplate, _ := autoscaletest.Created(rules, template, nil)
	created, notApplied := autoscaletest.Applied(asTemplate, entry)
	if notApplied != "" {
		return created, "the admission policy would not apply it: " + notApplied
	}
	describe := func() string {
		return fmt.Sprintf("\ntemplate as admitted: %s\ncreated: %s\nsummary: %s", podText(asTemplate), podText(created), summary)
	}
	if rules != nil && len(rules.LimitRanges)+len(rules.Quotas) > 0 {
		stats["entriesWithRules"]++
		already := map[string]bool{}
		for _, v := range rules.Violations(asTemplate, nil) {
			already[v.Object+"/"+v.Container+"/"+string(v.Resource)] = true
		}
		charged := rules.Charged(created, asTemplate, replicas-1)
		for _, v := range charged.Violations(created, nil) {
			if !already[v.Object+"/"+v.Container+"/"+string(v.Resource)] {
				return created, fmt.Sprintf("the apiserver would refuse the new pod: %s (%s)%s", v.Message, v.Object, describe())
			}
		}
		if strings.Contains(summary, "LimitRange") {
			stats["entriesClamped"]++
		}
	}
	if b, n := qosutil.ComputePodQOS(asTemplate), qosutil.ComputePodQOS(created); b != n {
		return created, fmt.Sprintf("QoS %s as the template is admitted, %s with the entry%s", b, n, describe())
	}
	if room != nil {
		have := podRequests(asTemplate)
		for r, q := range podRequests(created) {
			room, ok := room[r]
			if !ok {
				continue
			}
			most := room
			if t := have[r]; t.Cmp(room) > 0 {
				room = t
			}
			if q.Cmp(room) > 0 {
				return created, fmt.Sprintf("the new pod requests %s %s, no node has more than %s%s", q.String(), r, most.String(), describe())
			}
		}
		stats["entriesRoom"]++
	}
	return created, ""
}

// checkRecreations: the first pod's replacement, as DecideRecreate would
// record it (the pod owned by a ReplicaSet, short of room for an hour, a
// node that holds anything; one pod a case keeps the fuzz quick under
// -race, and the first pod is drawn like any), passes checkReplacement.
func checkRecreations(c autoscaletest.NamespacedCase, stats map[string]int) string {
	big := []placement.NodePods{{Node: autoscaletest.ReadyNode("big", corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti")})}}
	for i, in := range c.Pods[:1] {
		owned := *in.Pod
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs-uid", Controller: ptr(true)}}
		p := &owned
		in.Pod = p
		d, err := placement.DecideRecreate(placement.RecreateInput{Pod: in, Spec: c.Spec, Server: c.Server, MemoryFloorHeadroom: c.MemoryFloorHeadroom,
			ShortSince: c.Now.Add(-time.Hour), Template: c.Templates[i], Generation: 1, Settle: time.Second, Nodes: big, Now: c.Now, Holds: c.Holds, Rules: c.Rules})
		if err != nil {
			return fmt.Sprintf("DecideRecreate of %s: %v", p.Name, err)
		}
		if d.Step != placement.RecreateRecord {
			if d.Reason == string(fleet.HoldNamespaceRules) {
				stats["recreationsHeld"]++
			}
			continue
		}
		if _, msg := checkReplacement(c.Rules, c.Templates[i], p, d.Containers, stats); msg != "" {
			return msg
		}
	}
	return ""
}

// checkReplacement: the replacement of pod p that a recreation entry sizes
// is created by the apiserver from the pod's template with the entry
// applied, passes the LimitRanges (judged as a create) and the quotas
// (charged for what it asks beyond the pod it replaces), and keeps the QoS
// class its template's pod would have. It returns the replacement as
// created, and what is wrong with it ("": nothing).
func checkReplacement(rules *nsrules.Rules, template *corev1.PodTemplateSpec, p *corev1.Pod, cs []v1alpha1.RecreatedContainer, stats map[string]int) (*corev1.Pod, string) {
	entry := make([]v1alpha1.AdmittedContainer, len(cs))
	for j, rc := range cs {
		entry[j] = v1alpha1.AdmittedContainer(rc)
	}
	asTemplate, _ := autoscaletest.Created(rules, template, nil)
	created, notApplied := autoscaletest.Applied(asTemplate, entry)
	if notApplied != "" {
		return created, fmt.Sprintf("pod %s: the recreation policy would not apply the entry: %s\ntemplate as admitted: %s\nentry: %s", p.Name, notApplied, podText(asTemplate), placement.ContainersText(cs))
	}
	stats["recreations"]++
	describe := func() string {
		return fmt.Sprintf("\npod: %s\nreplacement: %s", podText(p), podText(created))
	}
	if r := rules; r != nil {
		for _, v := range r.Violations(created, nil) {
			if !strings.HasPrefix(v.Object, "ResourceQuota/") {
				return created, fmt.Sprintf("pod %s: the apiserver would refuse its replacement: %s (%s)%s", p.Name, v.Message, v.Object, describe())
			}
		}
		quotas := nsrules.Rules{Quotas: r.Quotas}
		for _, v := range quotas.Violations(created, p) {
			if strings.HasPrefix(v.Object, "ResourceQuota/") {
				return created, fmt.Sprintf("pod %s: the quota would refuse its replacement beyond the pod it replaces: %s (%s)%s", p.Name, v.Message, v.Object, describe())
			}
		}
	}
	if b, n := qosutil.ComputePodQOS(asTemplate), qosutil.ComputePodQOS(created); b != n {
		return created, fmt.Sprintf("pod %s: its replacement is %s, its template's pod %s%s", p.Name, n, b, describe())
	}
	return created, ""
}

// noted reports whether a note of any change of d mentions what.
func noted(d podchange.Decision, what string) bool {
	for _, ch := range d.All() {
		for _, n := range ch.Notes {
			if strings.Contains(n, what) {
				return true
			}
		}
	}
	return false
}

// podRequests is what the scheduler counts of a new pod.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// TestNamespaceInvariantSeeds replays the generated cases that found a bug
// in a namespace's rules, each named for what went wrong before its fix.
func TestNamespaceInvariantSeeds(t *testing.T) {
	cases := map[string]uint64{
		"a LimitRange min above maxAllowed took a raise past maxAllowed":                                    12323826513695442350,
		"a LimitRange's maxLimitRequestRatio lowered a memory limit with no working set known":              4901332883941122734,
		"the LimitRanger's defaults made a resized pod Guaranteed, which a resize may not":                  16347816492877858499,
		"a LimitRange's default the template leaves out kept the recreation policy from applying the entry": 11490521327097922628,
		"the template's other containers, as the LimitRanges default them, made the replacement Guaranteed": 13468305838745277329,
		"a request held for an HPA stays below the working set while a LimitRange max lowers the limit":     3907772652359617893,
		"a request raised to maxAllowed stays below the working set while a LimitRange lowers the limit":    14933401472237813496,
		"the LimitRanger's default requests took a resize past the node's allocatable":                      7285089023999894488,
		"the LimitRanger's default limit restarted a container the policy does not let restart":             14316969240621515715,
		"the LimitRanger's default requests took the node past the room the decision counted":               12090316369084234157,
		"the LimitRanger's default cpu requests took a raise past the cpu its node had free":                10904324856913991158,
	}
	for name, seed := range cases {
		t.Run(name, func(t *testing.T) {
			if msg := runInvariantCase(seed, map[string]int{}); msg != "" {
				t.Errorf("autoscaletest.Namespaced(%d): %s", seed, msg)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
