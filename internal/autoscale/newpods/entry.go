package newpods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// admittedKinds are the targets whose new pods the admission policy can
// tell apart: those it creates itself, and a Deployment's through its
// ReplicaSets (named after it and the pod-template-hash label).
var admittedKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true}

// EntryInput is what the admission entry of a policy is planned from.
type EntryInput struct {
	Spec *v1alpha1.TailorPolicySpec
	// Generation is the policy's metadata.generation: the entry applies
	// to it alone.
	Generation int64
	// Template is the target's pod template as last read (nil: none).
	Template *corev1.PodTemplateSpec
	// Recommendation is the workload's, as status says it (nil: none yet).
	Recommendation *v1alpha1.Recommendation
	// HeldByVPA names the VerticalPodAutoscaler that sizes the workload's
	// pods instead ("": none): new pods are left to it.
	HeldByVPA string
	// Conflict says which other TailorPolicy sizes the workload's pods
	// ("": none): this one plans nothing for new pods, so that the
	// admission policy never applies two policies' entries to one pod.
	Conflict string
	Holds    ownership.Holds
	Room     corev1.ResourceList
	Rules    *nsrules.Rules
	Replicas int
	Server   resize.Version
	Now      time.Time
}

// PlanEntry is status.admission: what new pods of the policy's target are
// created with (Admit, from the template and the recommendation), or why
// they start at their template's size. Nil in mode Off, so the admission
// policy has nothing to apply.
func PlanEntry(in EntryInput) *v1alpha1.Admission {
	spec := in.Spec
	if spec.Mode() == v1alpha1.UpdateModeOff {
		return nil
	}
	if in.HeldByVPA != "" {
		// No target the admission policy could match: new pods are left
		// to the VerticalPodAutoscaler.
		return &v1alpha1.Admission{Message: in.HeldByVPA}
	}
	if in.Conflict != "" {
		return &v1alpha1.Admission{ObservedGeneration: in.Generation, Message: "nothing planned for new pods: " + in.Conflict}
	}
	ref := spec.TargetRef
	if ref == nil {
		return &v1alpha1.Admission{ObservedGeneration: in.Generation, Message: "a selector policy names no workload: new pods start at their template's size and are resized in place once running"}
	}
	// Planned for this generation only: the admission policy applies it
	// while the policy still has it.
	out := &v1alpha1.Admission{TargetKind: ref.Kind, TargetName: ref.Name, ObservedGeneration: in.Generation}
	switch {
	case !ApplyOnCreate(spec):
		out.Message = "applyOnCreate is false: new pods start at their template's size"
		return out
	case spec.NodeClasses != nil:
		// The admission policy reads the pod alone: a DaemonSet pod names
		// its node, but not the node's labels or size, so no entry could
		// tell which class's size to apply.
		out.Message = "sized per node class: new pods start at their template's size and are resized in place to their class's recommendation once running"
		return out
	case !admittedKinds[ref.Kind]:
		out.Message = fmt.Sprintf("new pods of a %s are not told apart at admission (only those of Deployments, StatefulSets, DaemonSets, ReplicaSets and Jobs are): they start at their template's size", ref.Kind)
		return out
	case in.Template == nil:
		out.Message = fmt.Sprintf("%s %s has no pod template", ref.Kind, ref.Name)
		return out
	case in.Recommendation == nil && spec.StartupBoost == nil:
		out.Message = "no recommendation yet: new pods start at their template's size"
		return out
	}
	// Before a recommendation, a startup boost still applies, to the
	// template's requests.
	targets := map[string]podchange.Target{}
	if in.Recommendation != nil {
		for _, cr := range in.Recommendation.ContainerRecommendations {
			if cr.ContainerName == podcontainers.PodLevelName {
				continue
			}
			var t podchange.Target
			if q, ok := cr.Target[corev1.ResourceCPU]; ok {
				t.CPU = &q
			}
			if q, ok := cr.Target[corev1.ResourceMemory]; ok {
				t.Memory = &q
			}
			if q, ok := cr.TargetLimit[corev1.ResourceMemory]; ok {
				t.MemoryLimit = &q
			}
			targets[cr.ContainerName] = t
		}
	}
	got, err := Admit(AdmitInput{Template: in.Template, Spec: spec, Targets: targets, Server: in.Server, Now: in.Now,
		Holds: in.Holds, Boost: spec.StartupBoost, Room: in.Room, Rules: in.Rules, Replicas: in.Replicas})
	if err != nil {
		out.Message = "new pods start at their template's size: " + err.Error()
		return out
	}
	out.Containers, out.Summary, out.Boost = got.Containers, got.Summary, got.Boost
	msg := got.Held
	if len(out.Containers) == 0 && msg == "" {
		msg = "the template's resources match the recommendation"
	}
	if len(got.NotBoosted) > 0 {
		msg = strings.TrimPrefix(msg+"; "+strings.Join(got.NotBoosted, "; "), "; ")
	}
	out.Message = msg
	return out
}

// AdmittedTemplate is template as the apiserver creates a pod from it,
// before any admission policy: requests defaulted from limits, then the
// LimitRanges' defaults (rules nil: none). The recreation policy compares
// the new pod's values with the entry's template values at that point, and
// a pod created from the template under the same LimitRanges has them.
func AdmittedTemplate(rules *nsrules.Rules, template *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if rules == nil {
		rules = &nsrules.Rules{}
	}
	pod := rules.Admitted(&corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec})
	return &corev1.PodTemplateSpec{ObjectMeta: template.ObjectMeta, Spec: pod.Spec}
}
