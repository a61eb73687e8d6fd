package podchange_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
)

// TestClampedDecisionsPassTheEngine: the decision and the engine answer
// "what will the LimitRanger say" alike. For generated pods, targets and
// namespaces (autoscaletest.Namespaced), every decision whose values are
// all within the LimitRanges' bounds — clamped into them by the decision,
// or there already — is one the engine (resize.Plan with the rules) lets
// through the LimitRanger, and accepts. The decision may leave a value outside (a
// policy bound it keeps, a memory floor, a held request, a limit it never
// adds): those are left to the engine to hold, and counted apart.
//
// Pod-type items and LimitRanges that contradict each other are left out:
// the decision clamps containers, and no value passes a contradiction.
func TestClampedDecisionsPassTheEngine(t *testing.T) {
	// 2,000 cases clamp a dozen decisions into a LimitRange; a fifth of
	// them, under -short, may clamp none.
	n := 2000
	if testing.Short() {
		n = 400
	}
	stats, cases, seed, took := propertytest.RunN(t, n, 7, checkClampedDecisions)
	t.Logf("%d generated cases (seed %d) in %s: %d decisions within the LimitRanges judged by the engine, %d of them clamped into one; %d left outside by the decision; %d refused by another rule; %d pods already outside skipped",
		cases, seed, took.Round(time.Millisecond), stats["judged"], stats["clamped"], stats["outside"], stats["refusedOtherwise"], stats["podOutside"])
	if min := cases / 20; stats["judged"] < min || (stats["clamped"] == 0 && !testing.Short()) {
		t.Errorf("%d decisions judged (want at least %d), %d clamped (want some): the generator no longer reaches the LimitRanges", stats["judged"], min, stats["clamped"])
	}
}

func checkClampedDecisions(seed uint64, stats map[string]int) string {
	c := autoscaletest.Namespaced(seed)
	if c.Rules == nil {
		return ""
	}
	rules := nsrules.Rules{}
	for _, lr := range c.Rules.LimitRanges {
		var items []corev1.LimitRangeItem
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer {
				items = append(items, item)
			}
		}
		lr = *lr.DeepCopy()
		lr.Spec.Limits = items
		rules.LimitRanges = append(rules.LimitRanges, lr)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if b := rules.ContainerBounds(res); b.Min != nil && b.Max != nil && b.Min.Quantity.Cmp(b.Max.Quantity) > 0 {
			return ""
		}
	}
	for _, p := range c.Pods {
		if len(rules.LimitRangerViolations(p.Pod, p.Pod)) > 0 {
			stats["podOutside"]++
			continue
		}
		d, err := podchange.Decide(podchange.Input{Pod: p.Pod, Spec: c.Spec, Targets: p.Targets, PodTarget: p.PodTarget, WorkingSet: p.WorkingSet,
			MemoryFloorHeadroom: c.MemoryFloorHeadroom, Now: c.Now, Holds: c.Holds, Rules: &rules, LimitRatio: c.LimitRatio})
		if err != nil {
			return fmt.Sprintf("Decide for %s: %v", p.Pod.Name, err)
		}
		if len(d.Changes) == 0 {
			continue
		}
		within, clamped := true, false
		for _, ch := range d.Changes {
			if _, _, why := rules.ContainerBounds(ch.Resource).Clamp(ch.RequestNow, ch.LimitNow); why != "" {
				within = false
			}
			clamped = clamped || noted(podchange.Decision{Changes: []podchange.Change{ch}}, "LimitRange")
		}
		if !within {
			stats["outside"]++
			continue
		}
		plan, err := resize.Plan(resize.Input{Pod: p.Pod, Desired: d.Desired, Server: c.Server, Rules: &rules})
		if err != nil {
			return fmt.Sprintf("Plan for %s: %v", p.Pod.Name, err)
		}
		if plan.Rule == resize.RuleLimitRange {
			return fmt.Sprintf("pod %s: the decision keeps every value within the LimitRanges, the engine refuses it: %s\nLimitRanges: %+v\npod: %s\ndecision: %+v",
				p.Pod.Name, plan.Message, rules.LimitRanges, podText(p.Pod), d.Desired)
		}
		if plan.Outcome != resize.Accepted {
			stats["refusedOtherwise"]++
			continue
		}
		stats["judged"]++
		if clamped {
			stats["clamped"]++
		}
	}
	return ""
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

func podText(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range podcontainers.Running(&p.Spec) {
		fmt.Fprintf(&b, "%s req=%s lim=%s rp=%v; ", c.Name, listText(c.Resources.Requests), listText(c.Resources.Limits), c.ResizePolicy)
	}
	if p.Spec.Resources != nil {
		fmt.Fprintf(&b, "pod req=%s lim=%s", listText(p.Spec.Resources.Requests), listText(p.Spec.Resources.Limits))
	}
	return b.String()
}

// listText is a resource list's cpu and memory, readably.
func listText(l corev1.ResourceList) string {
	var parts []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[r]; ok {
			parts = append(parts, string(r)+":"+q.String())
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}
