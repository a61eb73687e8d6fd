package report

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// JVMAdvice is what a container's JVM heap makes of its memory limit
// (jvm.JudgeFit): memory above the heap's reach the heap can never use, or
// a full heap a raise gives nothing, and the heap option a restart should
// carry for the heap to use the limit.
type JVMAdvice struct {
	// Reason is LimitAboveHeapReach or HeapAtItsMaximum.
	Reason string `json:"reason"`
	// Option is the heap's option now, "" for the JVM's default
	// MaxRAMPercentage of 25%; Suggested the one a restart should carry.
	Option    string `json:"option"`
	Suggested string `json:"suggested"`
	// HeapMax is the heap's maximum now and Reach what the container may
	// need once it fills; Limit the memory limit Suggested is sized for,
	// and SuggestedHeap the heap's maximum under it.
	HeapMax       resource.Quantity `json:"heapMax"`
	Reach         resource.Quantity `json:"reach"`
	Limit         resource.Quantity `json:"limit"`
	SuggestedHeap resource.Quantity `json:"suggestedHeap"`
	// Message says it in one line.
	Message string `json:"message"`
}

// adviceOf is f for a row, nil when it says nothing.
func adviceOf(f jvm.Fit) *JVMAdvice {
	if f.Reason == "" {
		return nil
	}
	return &JVMAdvice{Reason: string(f.Reason), Option: f.Option, Suggested: f.Suggested, HeapMax: f.HeapMax, Reach: f.Reach,
		Limit: f.Limit, SuggestedHeap: f.SuggestedHeap, Message: f.Message}
}

// runningJVM judges the JVM of container name of w's running pods against
// the largest memory limit they have (the row's), the recommendation's
// memory limit (or request, without one apart) and the history's peak.
// A heap sized from the limit at start is known only in a pod never
// resized since it was created (metadata.generation 1): its limit is the
// one its JVM started under.
func runningJVM(w *Workload, name string, row Row) *JVMAdvice {
	var pod *corev1.Pod
	var c *corev1.Container
	for _, p := range w.Pods {
		pc := podcontainers.Named(p, name)
		if pc == nil {
			continue
		}
		if lim, ok := pc.Resources.Limits[corev1.ResourceMemory]; ok && lim.Cmp(row.Limits[corev1.ResourceMemory]) == 0 {
			pod, c = p, pc
			break
		}
	}
	if c == nil {
		return nil
	}
	in := jvm.FitInput{Heap: jvm.HeapOf(c), Limit: row.Limits[corev1.ResourceMemory], Needed: needed(row), WorkingSet: peak(w, name)}
	if pod.Generation <= 1 {
		in.StartLimit = in.Limit
	}
	return adviceOf(jvm.JudgeFit(in))
}

// needed is the memory limit a row's recommendation asks for: the one
// advised apart, else the request.
func needed(row Row) resource.Quantity {
	if q, ok := row.RecommendedLimit[corev1.ResourceMemory]; ok {
		return q
	}
	return row.Recommended[corev1.ResourceMemory]
}

// peak is the history's highest working set of container name, nil
// without a history.
func peak(w *Workload, name string) *resource.Quantity {
	h, ok := w.History[name]
	if !ok || h == nil || len(h.Memory) == 0 {
		return nil
	}
	return resource.NewQuantity(int64(percentile(h.Memory, 1)), resource.BinarySI)
}

// TemplateJVM is the heap option a template's container is to start its
// JVM with, and why.
type TemplateJVM struct {
	Container string
	Init      bool
	Edit      jvm.OptionEdit
	Advice    JVMAdvice
}

// planJVMs judges each JVM of tpl at the memory limit the plan gives it
// (limits, by container; else the template's own), which is also the
// limit its new pods start under, and edits the spec of those a restart
// should start with another heap option. What cannot be edited (options
// from a ConfigMap, a JVM a script starts) is said in skipped.
func planJVMs(w *Workload, tpl *corev1.PodTemplateSpec, rows []Row, limits map[string]corev1.ResourceList) (out []TemplateJVM, skipped []string) {
	byName := map[string]Row{}
	for _, r := range rows {
		byName[r.Container] = r
	}
	tp := &corev1.Pod{Spec: tpl.Spec}
	for _, name := range podcontainers.Names(tp) {
		c := podcontainers.Named(tp, name)
		row, ok := byName[name]
		if !ok {
			continue
		}
		limit, ok := limits[name][corev1.ResourceMemory]
		if !ok {
			limit, ok = c.Resources.Limits[corev1.ResourceMemory]
		}
		if !ok {
			continue
		}
		f := jvm.JudgeFit(jvm.FitInput{Heap: jvm.HeapOf(c), Limit: limit, StartLimit: limit, Needed: needed(row), WorkingSet: peak(w, name)})
		if f.Reason == "" {
			continue
		}
		if f.Limit.Cmp(limit) > 0 {
			// A full heap the recommendation outgrows, at a limit the
			// plan cut (a bound, a quota): the heap is sized for the
			// limit the template will have, never above it.
			if f = jvm.JudgeFit(jvm.FitInput{Heap: jvm.HeapOf(c), Limit: limit, StartLimit: limit}); f.Reason == "" {
				continue
			}
		}
		edit, err := jvm.SetOption(c, f.Suggested)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		out = append(out, TemplateJVM{Container: name, Init: !isRegular(tpl, name), Edit: edit, Advice: *adviceOf(f)})
	}
	return out, skipped
}

func isRegular(tpl *corev1.PodTemplateSpec, name string) bool {
	for _, c := range tpl.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// jvmSummary is "app: -Xmx256m->-Xmx1587m".
func jvmSummary(j TemplateJVM) string {
	from := j.Advice.Option
	if from == "" {
		from = "default heap"
	}
	return fmt.Sprintf("%s: %s->%s", j.Container, from, j.Advice.Suggested)
}
