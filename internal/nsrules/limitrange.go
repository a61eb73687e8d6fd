package nsrules

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// What this file mirrors lives in Kubernetes v1.37.1 (paths inside the
// k8s.io/kubernetes module):
//   - plugin/pkg/admission/limitranger/admission.go: defaulting
//     (PodMutateLimitFunc) and the checks (PodValidateLimitFunc, minConstraint,
//     maxConstraint, limitRequestRatioConstraint). The plugin handles pod
//     CREATE and UPDATE of pods/resize alike (SupportsAttributes), skips a pod
//     already being deleted, and ignores every other pod update.
//   - pkg/apis/core/v1/defaults.go, SetDefaults_LimitRangeItem: the stored
//     LimitRange's default and defaultRequest filled from max, default and min.

// LimitRangerAnnotation is the annotation the LimitRanger leaves on a pod it
// defaulted.
const LimitRangerAnnotation = "kubernetes.io/limit-ranger"

// defaultedItem is item as the apiserver stores it: a Container item's missing
// default limit comes from max, a missing default request from the default
// limit, else from min. The apiserver does this when the LimitRange is
// written, so a cached LimitRange already has them; doing it again changes
// nothing and makes hand-built LimitRanges behave like stored ones.
func defaultedItem(item corev1.LimitRangeItem) corev1.LimitRangeItem {
	if item.Type != corev1.LimitTypeContainer {
		return item
	}
	item = *item.DeepCopy()
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range item.Max {
		if _, ok := item.Default[k]; !ok {
			item.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Default {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Min {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
	return item
}

// Admitted is pod as the LimitRanger lets it through. First the API's own
// pod defaulting, which runs when the request is decoded, before any
// admission: a container's missing request is its limit
// (pkg/apis/core/v1/defaults.go, SetDefaults_Pod). Then every container and
// init container (sidecars included) gets each LimitRange's default limit and
// default request for a resource it still does not set, and the pod gets the
// LimitRanger's annotation. pod is not changed.
//
// The LimitRanger defaults in the mutating phase, before a
// MutatingAdmissionPolicy or webhook; it checks (Violations) in the
// validating phase, after them (pkg/kubeapiserver/options/plugins.go,
// AllOrderedPlugins). So a mutation sees Admitted(pod) and overrides it, and
// what it leaves is judged.
//
// All resources are defaulted, not only cpu and memory, because that is the
// pod the apiserver stores. Where two LimitRanges default the same resource,
// the apiserver takes the first in its cache's order, which is not defined;
// nsrules takes the first by name.
//
// A pods/resize update is defaulted the same way, so pass a resize's new pod
// through Admitted before Violations.
func (r Rules) Admitted(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Spec.Containers, out.Spec.InitContainers} {
		for i := range cs {
			requestsFromLimits(&cs[i])
		}
	}
	for _, lr := range sortedLimitRanges(r.LimitRanges) {
		requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			item = defaultedItem(item)
			for k, v := range item.DefaultRequest {
				requests[k] = v.DeepCopy()
			}
			for k, v := range item.Default {
				limits[k] = v.DeepCopy()
			}
		}
		var notes []string
		for i := range out.Spec.Containers {
			notes = mergeDefaults(&out.Spec.Containers[i], requests, limits, "container", notes)
		}
		for i := range out.Spec.InitContainers {
			notes = mergeDefaults(&out.Spec.InitContainers[i], requests, limits, "init container", notes)
		}
		// Each LimitRange that sets something writes the annotation anew, so it
		// tells what the last one set, as the apiserver's does.
		if len(notes) > 0 {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
	return out
}

func requestsFromLimits(c *corev1.Container) {
	if c.Resources.Limits == nil {
		return
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	for k, v := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[k]; !ok {
			c.Resources.Requests[k] = v.DeepCopy()
		}
	}
}

func mergeDefaults(c *corev1.Container, requests, limits corev1.ResourceList, kind string, notes []string) []string {
	var setRequests, setLimits []string
	for k, v := range limits {
		if _, ok := c.Resources.Limits[k]; !ok {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[k] = v.DeepCopy()
			setLimits = append(setLimits, string(k))
		}
	}
	for k, v := range requests {
		if _, ok := c.Resources.Requests[k]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[k] = v.DeepCopy()
			setRequests = append(setRequests, string(k))
		}
	}
	if len(setRequests) > 0 {
		slices.Sort(setRequests)
		notes = append(notes, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", kind, c.Name))
	}
	if len(setLimits) > 0 {
		slices.Sort(setLimits)
		notes = append(notes, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", kind, c.Name))
	}
	return notes
}

// limitRangeViolations are the LimitRanger's refusals of pod, which must
// already be defaulted (Admitted). Init containers are checked like the
// others, sidecar or not; a Pod item judges the pod's sums as the scheduler
// counts them (sidecars added, the largest init container step), without
// overhead and with pod-level resources in place of the sums they set.
func (r Rules) limitRangeViolations(pod *corev1.Pod) []Violation {
	var out []Violation
	for _, lr := range sortedLimitRanges(r.LimitRanges) {
		object := "LimitRange/" + lr.Name
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
					for _, c := range cs {
						for _, v := range itemViolations(item, c.Resources.Requests, c.Resources.Limits) {
							v.Object, v.Container = object, c.Name
							out = append(out, v)
						}
					}
				}
			case corev1.LimitTypePod:
				opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
				requests, limits := resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
				for _, v := range itemViolations(item, requests, limits) {
					v.Object = object
					out = append(out, v)
				}
			}
		}
	}
	return out
}

func itemViolations(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []Violation {
	var out []Violation
	kind := string(item.Type)
	for _, res := range resources {
		req, hasReq := requests[res]
		lim, hasLim := limits[res]
		if q, ok := item.Min[res]; ok {
			v := scaled(req, lim, q)
			switch {
			case !hasReq:
				out = append(out, Violation{Resource: res, Message: fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", res, kind, q.String())})
			case v[0] < v[2]:
				out = append(out, Violation{Resource: res, Message: fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", res, kind, q.String(), req.String())})
			case hasLim && v[1] < v[2]:
				out = append(out, Violation{Resource: res, Message: fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", res, kind, q.String(), lim.String())})
			}
		}
		if q, ok := item.Max[res]; ok {
			v := scaled(req, lim, q)
			switch {
			case !hasLim:
				out = append(out, Violation{Resource: res, Message: fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", res, kind, q.String())})
			case v[1] > v[2]:
				out = append(out, Violation{Resource: res, Message: fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", res, kind, q.String(), lim.String())})
			case hasReq && v[0] > v[2]:
				out = append(out, Violation{Resource: res, Message: fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", res, kind, q.String(), req.String())})
			}
		}
		if q, ok := item.MaxLimitRequestRatio[res]; ok {
			if msg := ratioViolation(res, kind, q, req, hasReq, lim, hasLim); msg != "" {
				out = append(out, Violation{Resource: res, Message: msg})
			}
		}
	}
	return out
}

// ratioViolation mirrors limitRequestRatioConstraint, float arithmetic
// included, so that a value at the edge is judged as the apiserver judges it.
func ratioViolation(res corev1.ResourceName, kind string, ratio, req resource.Quantity, hasReq bool, lim resource.Quantity, hasLim bool) string {
	v := scaled(req, lim, ratio)
	if !hasReq || v[0] == 0 {
		return fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", res, kind, ratio.String())
	}
	if !hasLim || v[1] == 0 {
		return fmt.Sprintf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", res, kind, ratio.String())
	}
	observed := float64(v[1]) / float64(v[0])
	shown := observed
	enforced := float64(ratio.Value())
	if ratio.Value() <= resource.MaxMilliValue {
		observed *= 1000
		enforced = float64(ratio.MilliValue())
	}
	if observed > enforced {
		return fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", res, kind, ratio.String(), shown)
	}
	return ""
}

// requestsOverLimits are the containers whose request is above their limit,
// which pod validation refuses. The one to blame is the LimitRange that
// defaulted the limit, where one did (the first by name, as in Admitted).
func (r Rules) requestsOverLimits(pod *corev1.Pod) []Violation {
	var out []Violation
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			for _, res := range resources {
				req, okReq := c.Resources.Requests[res]
				lim, okLim := c.Resources.Limits[res]
				if !okReq || !okLim || req.Cmp(lim) <= 0 {
					continue
				}
				out = append(out, Violation{Object: r.defaultLimitFrom(res), Container: c.Name, Resource: res, Message: fmt.Sprintf(
					"%s request %s must be less than or equal to %s limit of %s", res, req.String(), res, lim.String())})
			}
		}
	}
	return out
}

func (r Rules) defaultLimitFrom(res corev1.ResourceName) string {
	for _, lr := range sortedLimitRanges(r.LimitRanges) {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			if _, ok := defaultedItem(item).Default[res]; ok {
				return "LimitRange/" + lr.Name
			}
		}
	}
	return ""
}

// otherResourcesDefaulted are the resources other than cpu and memory that
// pod (a resize, as Admitted) sets and old did not set alike: the LimitRanger's
// defaults for them, which resize validation refuses
// (pkg/apis/core/validation/validation.go, ValidatePodResize).
func (r Rules) otherResourcesDefaulted(pod, old *corev1.Pod) []Violation {
	before := map[string]corev1.ResourceRequirements{}
	for _, cs := range [][]corev1.Container{old.Spec.Containers, old.Spec.InitContainers} {
		for _, c := range cs {
			before[c.Name] = c.Resources
		}
	}
	var out []Violation
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			was := before[c.Name]
			changed := map[corev1.ResourceName]bool{}
			for _, pair := range [][2]corev1.ResourceList{{c.Resources.Requests, was.Requests}, {c.Resources.Limits, was.Limits}} {
				for res, q := range pair[0] {
					if w, ok := pair[1][res]; !slices.Contains(resources, res) && (!ok || w.Cmp(q) != 0) {
						changed[res] = true
					}
				}
			}
			for _, res := range slices.Sorted(maps.Keys(changed)) {
				out = append(out, Violation{Object: r.defaultFrom(res), Container: c.Name, Resource: res,
					Message: fmt.Sprintf("only cpu and memory resources are mutable: the LimitRanger defaults %s into the resize", res)})
			}
		}
	}
	return out
}

// defaultFrom names the first LimitRange by name that defaults res.
func (r Rules) defaultFrom(res corev1.ResourceName) string {
	for _, lr := range sortedLimitRanges(r.LimitRanges) {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			it := defaultedItem(item)
			if has(it.Default, res) || has(it.DefaultRequest, res) {
				return "LimitRange/" + lr.Name
			}
		}
	}
	return ""
}

func has(l corev1.ResourceList, res corev1.ResourceName) bool { _, ok := l[res]; return ok }
