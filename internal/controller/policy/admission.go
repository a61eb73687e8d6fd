package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
)

// admittedKinds are the targets whose new pods the admission policy can
// tell apart: those it creates itself, and a Deployment's through its
// ReplicaSets (named after it and the pod-template-hash label).
var admittedKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true}

// admission is status.admission: what new pods of the policy's target are
// created with, planned from the target's template as last read and the
// workload's recommendation. Nil in mode Off, so the admission policy has
// nothing to apply.
func (r *Reconciler) admission(policy *v1alpha1.TailorPolicy, state *policyState, rec *v1alpha1.Recommendation, in *syncInput, now time.Time) *v1alpha1.Admission {
	spec := &policy.Spec
	if policyMode(policy) == v1alpha1.UpdateModeOff {
		return nil
	}
	ref := spec.TargetRef
	if ref == nil {
		return &v1alpha1.Admission{ObservedGeneration: policy.Generation, Message: "a selector policy names no workload: new pods start at their template's size and are resized in place once running"}
	}
	// Planned for this generation only: the admission policy applies it
	// while the policy still has it.
	out := &v1alpha1.Admission{TargetKind: ref.Kind, TargetName: ref.Name, ObservedGeneration: policy.Generation}
	switch {
	case !autoscale.ApplyOnCreate(spec):
		out.Message = "applyOnCreate is false: new pods start at their template's size"
		return out
	case !admittedKinds[ref.Kind]:
		out.Message = fmt.Sprintf("new pods of a %s are not told apart at admission (only those of Deployments, StatefulSets, DaemonSets, ReplicaSets and Jobs are): they start at their template's size", ref.Kind)
		return out
	case state.template == nil:
		out.Message = fmt.Sprintf("%s %s has no pod template", ref.Kind, ref.Name)
		return out
	case rec == nil && spec.StartupBoost == nil:
		out.Message = "no recommendation yet: new pods start at their template's size"
		return out
	}
	// Before a recommendation, a startup boost still applies, to the
	// template's requests.
	targets := map[string]autoscale.Target{}
	for _, cr := range recommendations(rec) {
		if cr.ContainerName == autoscale.PodLevelName {
			continue
		}
		var t autoscale.Target
		if q, ok := cr.Target["cpu"]; ok {
			t.CPU = &q
		}
		if q, ok := cr.Target["memory"]; ok {
			t.Memory = &q
		}
		targets[cr.ContainerName] = t
	}
	got, err := autoscale.Admit(autoscale.AdmitInput{Template: state.template, Spec: spec, Targets: targets,
		Server: r.Actuator.Server.Version, Now: now, Holds: in.decision.Holds, Boost: spec.StartupBoost, Room: in.newPodRoom,
		Rules: in.decision.Rules, Replicas: len(in.pods)})
	if err != nil {
		out.Message = truncate("new pods start at their template's size: "+err.Error(), 1024)
		return out
	}
	out.Containers, out.Summary, out.Boost = got.Containers, truncate(got.Summary, 1024), got.Boost
	msg := got.Held
	if len(out.Containers) == 0 && msg == "" {
		msg = "the template's resources match the recommendation"
	}
	if len(got.NotBoosted) > 0 {
		msg = strings.TrimPrefix(msg+"; "+strings.Join(got.NotBoosted, "; "), "; ")
	}
	out.Message = truncate(msg, 1024)
	return out
}

func recommendations(rec *v1alpha1.Recommendation) []v1alpha1.RecommendedContainerResources {
	if rec == nil {
		return nil
	}
	return rec.ContainerRecommendations
}
