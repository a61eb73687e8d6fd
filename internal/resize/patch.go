package resize

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The patch is typed rather than a map so its JSON is stable: field order is
// fixed and encoding/json sorts resource names.
type patchBody struct {
	Metadata *patchMeta `json:"metadata,omitempty"`
	Spec     patchSpec  `json:"spec"`
}

type patchMeta struct {
	// ResourceVersion makes the apiserver answer 409 Conflict if the pod
	// changed since it was read: a plan made from a stale pod is not applied.
	ResourceVersion string `json:"resourceVersion"`
}

type patchSpec struct {
	InitContainers []patchContainer `json:"initContainers,omitempty"`
	Containers     []patchContainer `json:"containers,omitempty"`
	Resources      *patchResources  `json:"resources,omitempty"`
}

type patchContainer struct {
	Name      string         `json:"name"`
	Resources patchResources `json:"resources"`
}

// patchResources holds entries to set and, as JSON null, entries to delete
// (strategic merge patch deletes a map key whose value is null).
type patchResources struct {
	Requests map[corev1.ResourceName]*resource.Quantity `json:"requests,omitempty"`
	Limits   map[corev1.ResourceName]*resource.Quantity `json:"limits,omitempty"`
}

// buildPatch writes the strategic merge patch for the resize subresource:
// changed containers by name (the merge key, so order in the pod is kept),
// pod-level resources when they change, and the pod's resourceVersion. Each
// changed container carries its full cpu/memory requests and limits after
// defaulting, so the patch says exactly what the pod will hold.
func buildPatch(before, after *corev1.Pod, changes []ContainerChange, podLevelChanged bool) ([]byte, error) {
	body := patchBody{}
	if before.ResourceVersion != "" {
		body.Metadata = &patchMeta{ResourceVersion: before.ResourceVersion}
	}
	changed := map[string]bool{}
	for _, c := range changes {
		changed[c.Name] = c.Changed
	}
	for i, c := range after.Spec.InitContainers {
		if changed[c.Name] {
			body.Spec.InitContainers = append(body.Spec.InitContainers, patchContainer{Name: c.Name, Resources: diffResources(&before.Spec.InitContainers[i].Resources, &c.Resources)})
		}
	}
	for i, c := range after.Spec.Containers {
		if changed[c.Name] {
			body.Spec.Containers = append(body.Spec.Containers, patchContainer{Name: c.Name, Resources: diffResources(&before.Spec.Containers[i].Resources, &c.Resources)})
		}
	}
	if podLevelChanged {
		r := diffResources(before.Spec.Resources, after.Spec.Resources)
		body.Spec.Resources = &r
	}
	return json.Marshal(body)
}

func diffResources(before, after *corev1.ResourceRequirements) patchResources {
	var b, a corev1.ResourceRequirements
	if before != nil {
		b = *before
	}
	if after != nil {
		a = *after
	}
	return patchResources{Requests: diffList(b.Requests, a.Requests), Limits: diffList(b.Limits, a.Limits)}
}

func diffList(before, after corev1.ResourceList) map[corev1.ResourceName]*resource.Quantity {
	out := map[corev1.ResourceName]*resource.Quantity{}
	for name, q := range after {
		q := q.DeepCopy()
		out[name] = &q
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			out[name] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
