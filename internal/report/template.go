package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/manifest"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
)

// TemplateInput is what PlanTemplate plans one workload's template from.
type TemplateInput struct {
	Workload *Workload
	// Rows are the workload's rows: each container's recommendation.
	Rows []Row
	// Ref is the object whose template it is (a CronJob for its Jobs'
	// pods), and Template that template, from the cluster or a manifest.
	Ref      manifest.Ref
	Template *corev1.PodTemplateSpec
	// Rules are the namespace's LimitRanges and quotas (nil: none known)
	// and HPAs its HorizontalPodAutoscalers: a request one scales on stays.
	Rules  *nsrules.Rules
	HPAs   []autoscalingv2.HorizontalPodAutoscaler
	Server resize.Version
	Now    time.Time
}

// TemplatePlan is one workload's template at the recommendation.
type TemplatePlan struct {
	// Containers are the values that change, per container; none when
	// the template already asks for the recommendation, or is held.
	Containers []manifest.Container
	// Summary says what changes: "app: cpu 500m->200m (limit 1->400m)".
	Summary string
	// Held says why nothing changes where a recommendation would.
	Held string
	// HPA says which requests an HPA's utilization target keeps; empty
	// when none.
	HPA string
	// JVMs are the containers whose JVM is to start with another heap
	// option (their edits are in Containers too), and JVMSkipped the ones
	// that should but whose spec cannot carry it, and why.
	JVMs       []TemplateJVM
	JVMSkipped []string
}

// PlanTemplate is the template a workload's manifest needs for its new
// pods to start at the report's recommendation: newpods.SizeTemplate,
// as the admission policy sizes new pods, so the policy's controlledValues,
// bounds and controlled resources, the pod's QoS class, the namespace's
// LimitRanges and quotas and its HPAs' utilization targets are kept as a
// running policy keeps them. A workload without a policy is planned with
// the defaults (cpu and memory, RequestsAndLimits).
func PlanTemplate(in TemplateInput) (TemplatePlan, error) {
	var out TemplatePlan
	if in.Template == nil {
		return out, fmt.Errorf("%s has no pod template", in.Ref)
	}
	targets := map[string]podchange.Target{}
	var none []string
	for _, r := range in.Rows {
		var t podchange.Target
		if q, ok := r.Recommended[corev1.ResourceCPU]; ok {
			t.CPU = &q
		}
		if q, ok := r.Recommended[corev1.ResourceMemory]; ok {
			t.Memory = &q
		}
		if q, ok := r.RecommendedLimit[corev1.ResourceMemory]; ok && t.Memory != nil {
			t.MemoryLimit = &q
		}
		if t.CPU == nil && t.Memory == nil {
			none = append(none, r.Container+": "+r.Reason)
			continue
		}
		targets[r.Container] = t
	}
	if len(targets) == 0 {
		out.Held = "no recommendation: " + strings.Join(none, "; ")
		return out, nil
	}
	spec := &v1alpha1.TailorPolicySpec{}
	if in.Workload.Policy != nil {
		spec = &in.Workload.Policy.Spec
	}
	holds, why := ownership.HPAHolds([]ownership.Workload{ownership.WorkloadOf(in.Ref.APIVersion, in.Ref.Kind, in.Ref.Name)}, in.HPAs)
	got, err := newpods.SizeTemplate(newpods.AdmitInput{Template: in.Template, Spec: spec, Targets: targets,
		Server: in.Server, Now: in.Now, Holds: holds, Rules: in.Rules, Replicas: len(in.Workload.Pods)})
	if err != nil {
		return out, fmt.Errorf("%s: %w", in.Ref, err)
	}
	if got.Held != "" {
		out.Held = got.Held
		return out, nil
	}
	inits := map[string]bool{}
	for _, c := range in.Template.Spec.InitContainers {
		inits[c.Name] = true
	}
	limits := map[string]corev1.ResourceList{}
	for _, ac := range got.Containers {
		limits[ac.Name] = ac.Limits
		c := manifest.Container{Name: ac.Name, Init: inits[ac.Name],
			Requests: changed(ac.Requests, ac.TemplateRequests), Limits: changed(ac.Limits, ac.TemplateLimits)}
		if c.Requests != nil || c.Limits != nil {
			out.Containers = append(out.Containers, c)
		}
	}
	resized := len(out.Containers) > 0
	// The JVMs judged at the limits the template is to have, which their
	// new pods start under.
	var heaps []string
	out.JVMs, out.JVMSkipped = planJVMs(in.Workload, in.Template, in.Rows, limits)
	for _, j := range out.JVMs {
		heaps = append(heaps, jvmSummary(j))
		i := slices.IndexFunc(out.Containers, func(c manifest.Container) bool { return c.Name == j.Container && c.Init == j.Init })
		if i < 0 {
			out.Containers = append(out.Containers, manifest.Container{Name: j.Container, Init: j.Init})
			i = len(out.Containers) - 1
		}
		c := &out.Containers[i]
		c.Command, c.Args = j.Edit.Command, j.Edit.Args
		if j.Edit.Env != nil {
			c.Env = []corev1.EnvVar{*j.Edit.Env}
		}
	}
	if resized {
		out.Summary = got.Summary
		if !holds.Empty() {
			out.HPA = why
		}
	}
	if len(heaps) > 0 {
		out.Summary = strings.TrimPrefix(out.Summary+"; heap "+strings.Join(heaps, ", "), "; ")
	}
	return out, nil
}

// changed is the entries of now that the template, as the apiserver admits
// it, does not already have.
func changed(now, template corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for r, q := range now {
		if t, ok := template[r]; ok && t.Cmp(q) == 0 {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[r] = q.DeepCopy()
	}
	return out
}
