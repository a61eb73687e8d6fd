package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TailorPolicy says which pods tailor right-sizes and how. It reads like a
// VerticalPodAutoscaler: a targetRef (or a label selector), an update mode,
// per-container policies and a recommendation in the status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tp,categories=tailor
// +kubebuilder:metadata:labels="app.kubernetes.io/name=tailor";"app.kubernetes.io/part-of=tailor"
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.updatePolicy.updateMode`,description="How tailor applies recommendations"
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.targetRef.kind`,priority=1,description="Kind of the target workload"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`,description="Name of the target workload (empty when a selector is used)"
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.recommendation.containerRecommendations[0].target.cpu`,description="CPU target of the first container"
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.status.recommendation.containerRecommendations[0].target.memory`,description="Memory target of the first container"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the policy is valid and acted upon"
// +kubebuilder:printcolumn:name="Blocked",type=string,JSONPath=`.status.conditions[?(@.type=="ResizesBlocked")].reason`,priority=1,description="Why resizes are blocked, if they are"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TailorPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the user asks for.
	// +required
	Spec TailorPolicySpec `json:"spec"`

	// status is what tailor recommends and did, written by the controller.
	// +optional
	Status TailorPolicyStatus `json:"status,omitempty"`
}

// TailorPolicyList is a list of TailorPolicy.
//
// +kubebuilder:object:root=true
type TailorPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TailorPolicy `json:"items"`
}

// TailorPolicySpec selects pods (targetRef or selector, exactly one) and
// bounds what tailor may do to them.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetRef) != has(self.selector)",message="exactly one of targetRef and selector must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.nodeClasses) || (has(self.targetRef) && self.targetRef.kind == 'DaemonSet')",message="nodeClasses is for a targetRef of kind DaemonSet, whose pods' load follows their node"
type TailorPolicySpec struct {
	// targetRef names the workload whose pods this policy sizes, as in
	// VerticalPodAutoscaler: a Deployment, StatefulSet, DaemonSet,
	// ReplicaSet, Job, or any resource with a scale subresource that has a
	// label selector. The workload is looked up by the controller; when it
	// does not exist, or has no selector, the policy's Ready condition says
	// so. Exactly one of targetRef and selector must be set.
	// +optional
	TargetRef *TargetRef `json:"targetRef,omitempty"`

	// selector picks the pods of this namespace this policy sizes, for pods
	// that no single workload owns. It must not be empty: an empty selector
	// would size every pod in the namespace. The pods it picks are sized as
	// one workload: one recommendation per container name, learnt from all
	// of them (the busiest sets it), so pods that differ belong in policies
	// of their own. Exactly one of targetRef and selector must be set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must set matchLabels or matchExpressions: an empty selector would select every pod in the namespace"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="selector.matchExpressions operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist']) || (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="selector.matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// updatePolicy says whether and how tailor applies its recommendations.
	// +optional
	// +kubebuilder:default={}
	UpdatePolicy *UpdatePolicy `json:"updatePolicy,omitempty"`

	// resourcePolicy bounds the recommendation per container.
	// +optional
	ResourcePolicy *ResourcePolicy `json:"resourcePolicy,omitempty"`

	// behavior paces resizes over time and across pods, in the manner of
	// HorizontalPodAutoscaler's behavior.
	// +optional
	// +kubebuilder:default={}
	Behavior *Behavior `json:"behavior,omitempty"`

	// startupBoost gives the pods' containers more CPU while they start,
	// for slow starters such as JVMs: from the pod's creation (applied at
	// admission; in place for a pod created without it, and again when a
	// container restarts) until the pod has been Ready for duration, or
	// until condition is True; then it is removed in place, with no
	// restart. Only containers whose cpu resizePolicy is NotRequired are
	// boosted (removing it must not restart them). Usage seen while a pod
	// is boosted is not learnt as steady CPU usage.
	// +optional
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`

	// metrics changes how this policy's usage is read. Leave it unset
	// unless the manager's queries do not fit the series your metrics
	// system keeps.
	// +optional
	Metrics *MetricsOverrides `json:"metrics,omitempty"`

	// nodeClasses learns a DaemonSet's usage per kind of node and sizes
	// each of its pods at its node's class: a log shipper or node agent
	// on a 64-core node running 200 pods uses far more than on a 4-core
	// node running ten, so one size for all wastes memory on the small
	// nodes or is killed on the big ones. Only for a targetRef of kind
	// DaemonSet, whose pods' load follows their node. New pods start at
	// their template's size (the admission policy sees the pod, not its
	// node's labels) and are resized in place to their class's
	// recommendation at the next sync.
	// +optional
	NodeClasses *NodeClasses `json:"nodeClasses,omitempty"`
}

// NodeClasses says how a node's class is told.
type NodeClasses struct {
	// label is the node label whose value is a node's class, such as
	// node.kubernetes.io/instance-type. Unset, or on a node without the
	// label: the node's size, as its allocatable CPU and memory each
	// rounded up to a power of two ("4cpu-16Gi").
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="label must be a label key such as node.kubernetes.io/instance-type"
	Label string `json:"label,omitempty"`
}

// StartupBoost is how much more CPU a starting pod gets, and for how long.
// The boosted request is within maxAllowed; a container's limit, if it has
// one, keeps its ratio to the request (Guaranteed pods stay Guaranteed);
// the node's room bounds a boost applied in place.
//
// +kubebuilder:validation:XValidation:rule="has(self.factorPercent) != has(self.cpu)",message="set exactly one of factorPercent and cpu"
type StartupBoost struct {
	// factorPercent is the boosted CPU request in percent of the request
	// the container would have (the recommendation, or its template's
	// before there is one): 200 doubles it (101-1000).
	// +optional
	// +kubebuilder:validation:Minimum=101
	// +kubebuilder:validation:Maximum=1000
	FactorPercent *int32 `json:"factorPercent,omitempty"`

	// cpu is the boosted CPU request as an amount, such as "1" or 1500m;
	// a container that would ask more anyway keeps its own.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('0')) > 0",message="cpu must be a positive quantity such as 500m or 2"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// duration is how long the boost lasts after the pod is Ready (or
	// condition is True), between 0s and 1h; default 30s, for the warm-up
	// that follows readiness.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) <= duration('1h')",message="duration must be a duration such as 30s or 2m, at most 1h"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// condition names a pod condition type (such as a readiness gate) that
	// ends the boost, duration after it turns True, instead of Ready.
	// +optional
	// +kubebuilder:validation:MaxLength=316
	Condition string `json:"condition,omitempty"`
}

// MetricsOverrides changes how one policy's usage is read.
type MetricsOverrides struct {
	// prometheus replaces the manager's PromQL queries for this policy's
	// pods, for a Prometheus whose series are named or labelled otherwise
	// (recording rules, relabelled cAdvisor series); each query left out
	// keeps the manager's. They apply only when the manager reads usage
	// from Prometheus (--metrics-source=prometheus): with another source
	// the policy works on that source's data, and its Ready condition and
	// an event say the queries are ignored.
	//
	// Each query is a Go template (text/template) of PromQL, rendered once
	// per namespace with these fields:
	//
	//   - {{.Namespace}}: the namespace of the pods asked for;
	//   - {{.Pods}}: a regular expression matching exactly the names of
	//     the pods asked for, for pod=~"{{.Pods}}";
	//   - {{.Window}}: the rate window as a PromQL duration such as 1m,
	//     for rate(...[{{.Window}}]).
	//
	// Each must return an instant vector with one sample per container,
	// labelled namespace, pod and container (aggregate with
	// "by (namespace, pod, container)"). A container with no sample, or
	// more than one, gets no recommendation, nor do the containers of a
	// query Prometheus refuses. A template that does not parse or names
	// another field makes the policy Ready=False with reason
	// InvalidPolicy, naming the query.
	//
	// The manager asks with its own credentials, so each query, rendered,
	// is confined to the policy's namespace: namespace="<the namespace>"
	// is put on every series selector, and a query that could read
	// another namespace (one that names another, or matches namespaces by
	// a pattern or !=) makes the policy Ready=False with reason
	// QueryOutsideNamespace. Each is at most 1024 bytes.
	// +optional
	Prometheus *PrometheusQueries `json:"prometheus,omitempty"`
}

// PrometheusQueries are PromQL templates, one per figure tailor reads; see
// MetricsOverrides.Prometheus for what a template sees and must return.
type PrometheusQueries struct {
	// cpu returns the CPU each container used, in cores, averaged over
	// {{.Window}}; the manager's query is a rate() of
	// container_cpu_usage_seconds_total.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="cpu must be a PromQL query; leave it out to keep the manager's"
	CPU string `json:"cpu,omitempty"`

	// memory returns each container's working set, in bytes; the manager's
	// query reads container_memory_working_set_bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="memory must be a PromQL query; leave it out to keep the manager's"
	Memory string `json:"memory,omitempty"`

	// throttled returns the fraction (0 to 1) of CFS periods in which each
	// container was throttled over {{.Window}}; the manager's query divides
	// the rates of container_cpu_cfs_throttled_periods_total and
	// container_cpu_cfs_periods_total. A container without a sample is not
	// throttled (it has no CPU limit).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="throttled must be a PromQL query; leave it out to keep the manager's"
	Throttled string `json:"throttled,omitempty"`

	// timestamp returns when each container's data was scraped, in Unix
	// seconds, so that data Prometheus stopped receiving is not taken for
	// fresh; the manager's query is timestamp() of
	// container_memory_working_set_bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="timestamp must be a PromQL query; leave it out to keep the manager's"
	Timestamp string `json:"timestamp,omitempty"`
}

// TargetRef points at a workload in the policy's namespace.
type TargetRef struct {
	// apiVersion is the workload's group and version, e.g. apps/v1 or batch/v1.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$')",message="apiVersion must be a group/version such as apps/v1, or v1 for the core group"
	APIVersion string `json:"apiVersion"`

	// kind is the workload's kind, e.g. Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name is the workload's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// UpdateMode says whether and how tailor changes pods.
//
// +kubebuilder:validation:Enum=Off;InPlace;InPlaceOrRecreate
type UpdateMode string

const (
	// UpdateModeOff only recommends: status is written, pods are never changed.
	UpdateModeOff UpdateMode = "Off"
	// UpdateModeInPlace resizes running pods through the resize subresource
	// and never evicts. A raise the node has no room for is cut to what
	// fits, and the rest reported in status.
	UpdateModeInPlace UpdateMode = "InPlace"
	// UpdateModeInPlaceOrRecreate resizes in place as InPlace does; when a
	// raise has found no room on the pod's node for recreateAfter, it evicts
	// the pod through the Eviction API, which honours PodDisruptionBudgets,
	// and its controller recreates it with the recommended resources (set at
	// admission from status.recreations).
	UpdateModeInPlaceOrRecreate UpdateMode = "InPlaceOrRecreate"
)

// UpdatePolicy says whether and how tailor applies recommendations.
type UpdatePolicy struct {
	// updateMode is "Off" (recommend only; quote it in YAML, where a bare
	// Off is the boolean false), InPlace (resize running pods, never evict)
	// or InPlaceOrRecreate (resize in place, and evict through the Eviction
	// API, honouring PodDisruptionBudgets, only when an in-place resize is
	// impossible).
	//
	// The default is InPlace, unlike VerticalPodAutoscaler whose default
	// recreates pods: a policy applied without reading this field must never
	// evict. Eviction is an explicit opt-in.
	// +optional
	// +kubebuilder:default=InPlace
	UpdateMode UpdateMode `json:"updateMode,omitempty"`

	// recreateAfter is, in mode InPlaceOrRecreate, how long a raise the
	// pod's node has no room for must persist before tailor evicts the pod
	// so that it is recreated, and placed, with the recommended resources
	// (0s to 24h; default 5m, as VerticalPodAutoscaler waits on a Deferred
	// in-place resize). Meanwhile tailor raises in place as far as the node
	// allows. Ignored in the other modes.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) <= duration('24h')",message="recreateAfter must be a duration such as 30s, 5m or 1h, at most 24h"
	RecreateAfter *metav1.Duration `json:"recreateAfter,omitempty"`

	// applyOnCreate sizes the new pods of the target workload (a rollout,
	// a scale-out, a replacement after an eviction or a node's loss) at
	// the current recommendation when they are created, through the
	// MutatingAdmissionPolicy tailor-admission, instead of at their
	// template's size. The template itself is never changed, so GitOps
	// tools see no drift. Default true; ignored in mode Off, which never
	// changes a pod. It needs a targetRef of kind Deployment, StatefulSet,
	// DaemonSet, ReplicaSet or Job; status.admission says what new pods
	// get, or why they get nothing.
	// +optional
	ApplyOnCreate *bool `json:"applyOnCreate,omitempty"`
}

// ResourcePolicy holds the per-container policies.
type ResourcePolicy struct {
	// containerPolicies apply to the containers they name; the entry named
	// "*" applies to every container, and a named entry takes each field
	// it leaves unset from the "*" entry (minAllowed and maxAllowed per
	// resource). This differs from VerticalPodAutoscaler, where a named
	// entry replaces "*" entirely. Fields neither sets take tailor's
	// defaults: mode Auto, controlledResources [cpu, memory],
	// controlledValues RequestsAndLimits, allowRestart false.
	//
	// A bound that only contradicts another entry's (e.g. "*" minAllowed
	// above a named entry's maxAllowed) cannot be checked by the apiserver;
	// the controller reports it in the Ready condition with reason
	// InvalidPolicy and does not act on that container.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.filter(p, p.containerName == '*').size() <= 1",message="containerName '*' (the default for every container) may appear only once"
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.containerName == '*' || self.exists_one(q, q.containerName == p.containerName))",message="each containerName may appear only once"
	ContainerPolicies []ContainerPolicy `json:"containerPolicies,omitempty"`
}

// ContainerMode says whether tailor sizes a container at all.
//
// +kubebuilder:validation:Enum=Auto;Off
type ContainerMode string

const (
	// ContainerModeAuto sizes the container as the policy says.
	ContainerModeAuto ContainerMode = "Auto"
	// ContainerModeOff leaves the container alone; no recommendation is made.
	ContainerModeOff ContainerMode = "Off"
)

// ControlledValues says which of a container's values tailor changes.
//
// +kubebuilder:validation:Enum=RequestsOnly;RequestsAndLimits
type ControlledValues string

const (
	// ControlledValuesRequestsOnly sets each request to the recommendation
	// and leaves limits alone. A request stops at its limit, or just below
	// it (a millicore, a MiB) where reaching it would make the pod
	// Guaranteed, which Kubernetes refuses; the ResizesBlocked condition
	// and the pod's status message then say the limit caps it. On a
	// Guaranteed pod no request can move without its limit, so nothing is
	// changed and the condition says so.
	ControlledValuesRequestsOnly ControlledValues = "RequestsOnly"
	// ControlledValuesRequestsAndLimits sets each request to the
	// recommendation and scales its limit with it, keeping the
	// limit-to-request ratio the pod has (Guaranteed pods keep requests
	// equal to limits), as VerticalPodAutoscaler does. A resource without a
	// limit stays without one.
	ControlledValuesRequestsAndLimits ControlledValues = "RequestsAndLimits"
)

// ContainerPolicy bounds what tailor does to one container, or to every
// container when containerName is "*". Every field but containerName may be
// left unset to inherit from the "*" entry, then from tailor's defaults.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !('cpu' in self.minAllowed) || !('cpu' in self.maxAllowed) || !isQuantity(string(self.minAllowed['cpu'])) || !isQuantity(string(self.maxAllowed['cpu'])) || quantity(string(self.minAllowed['cpu'])).compareTo(quantity(string(self.maxAllowed['cpu']))) <= 0",message="minAllowed.cpu must not exceed maxAllowed.cpu",messageExpression="'minAllowed.cpu (' + string(self.minAllowed['cpu']) + ') must not exceed maxAllowed.cpu (' + string(self.maxAllowed['cpu']) + ')'"
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !('memory' in self.minAllowed) || !('memory' in self.maxAllowed) || !isQuantity(string(self.minAllowed['memory'])) || !isQuantity(string(self.maxAllowed['memory'])) || quantity(string(self.minAllowed['memory'])).compareTo(quantity(string(self.maxAllowed['memory']))) <= 0",message="minAllowed.memory must not exceed maxAllowed.memory",messageExpression="'minAllowed.memory (' + string(self.minAllowed['memory']) + ') must not exceed maxAllowed.memory (' + string(self.maxAllowed['memory']) + ')'"
type ContainerPolicy struct {
	// containerName is the name of a container (regular, init or sidecar)
	// of the selected pods, or "*" for every container.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == '*' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="containerName must be a container name (a DNS label such as app) or '*' for every container"
	ContainerName string `json:"containerName"`

	// mode is Auto (size this container) or "Off" (leave it alone, e.g. a
	// sidecar another tool sizes; quote it in YAML, where a bare Off is the
	// boolean false). Default Auto.
	// +optional
	Mode *ContainerMode `json:"mode,omitempty"`

	// controlledResources lists the resources tailor sizes: cpu, memory or
	// both. Default [cpu, memory]. To leave a container alone, set mode Off.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, r == 'cpu' || r == 'memory')",message="controlledResources may only contain cpu and memory"
	// +kubebuilder:validation:XValidation:rule="size(self) > 0",message="controlledResources must not be empty; to leave a container alone set mode: Off"
	ControlledResources []corev1.ResourceName `json:"controlledResources,omitempty"`

	// controlledValues is RequestsOnly or RequestsAndLimits. Either way the
	// recommendation sizes the request: the peak usage over the
	// recommender's window plus a margin, never below what the container
	// uses now, and for memory never below its working set plus 10%.
	// RequestsAndLimits (the default, as in VerticalPodAutoscaler) moves
	// each limit with its request at the ratio the pod has; RequestsOnly
	// leaves limits alone and keeps each request at or under its limit.
	// A limit the container does not have is never added.
	// +optional
	ControlledValues *ControlledValues `json:"controlledValues,omitempty"`

	// minAllowed is the least tailor will set a request to, per resource
	// (cpu, memory). Write fractional values as strings ("500m", "0.5"):
	// the API accepts a quantity as a string or an integer only.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, r == 'cpu' || r == 'memory')",message="minAllowed may only name cpu and memory"
	// +kubebuilder:validation:XValidation:rule="self.all(r, isQuantity(string(self[r])) && quantity(string(self[r])).compareTo(quantity('0')) >= 0)",message="minAllowed values must be non-negative quantities such as 250m, 2 or 512Mi"
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`

	// maxAllowed is the most tailor will set a request to, per resource
	// (cpu, memory). With controlledValues RequestsAndLimits, limits scale
	// with the capped request. Values as for minAllowed.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, r == 'cpu' || r == 'memory')",message="maxAllowed may only name cpu and memory"
	// +kubebuilder:validation:XValidation:rule="self.all(r, isQuantity(string(self[r])) && quantity(string(self[r])).compareTo(quantity('0')) > 0)",message="maxAllowed values must be positive quantities such as 250m, 2 or 512Mi"
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`

	// allowRestart lets tailor make a change that restarts the container:
	// one to a resource whose resizePolicy is RestartContainer. Default
	// false: such a change is not made, and the ResizesBlocked condition
	// says which container and resource wait for it.
	// +optional
	AllowRestart *bool `json:"allowRestart,omitempty"`

	// recommender overrides the recommender's tuned parameters for this
	// container. Leave it unset unless measurements say otherwise.
	// +optional
	Recommender *RecommenderOverrides `json:"recommender,omitempty"`
}

// RecommenderOverrides replaces single parameters of the recommender; each
// unset field keeps the recommender's tuned default. The recommender sizes
// each resource from its peak over a window plus headroom.
type RecommenderOverrides struct {
	// cpuWindow is how far back the CPU peak looks: between 1m and 168h
	// (7 days), as a duration such as 30m or 2h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="cpuWindow must be a duration such as 30m or 2h, between 1m and 168h"
	CPUWindow *metav1.Duration `json:"cpuWindow,omitempty"`

	// memoryWindow is how far back the memory peak looks: between 1m and
	// 720h (30 days), as a duration such as 48h. Memory below a peak is an
	// OOM kill, so this is usually long. Unset, the peak of the last 48h is
	// held until three days are seen, then the last 4h's or the same hours'
	// on past days; set, the peak of the whole window is always held.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="memoryWindow must be a duration such as 24h or 48h, between 1m and 720h"
	MemoryWindow *metav1.Duration `json:"memoryWindow,omitempty"`

	// jitterHalfLife is how quickly the recommender forgets how noisy a
	// workload was: between 1m and 720h, as a duration such as 6h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="jitterHalfLife must be a duration such as 6h, between 1m and 720h"
	JitterHalfLife *metav1.Duration `json:"jitterHalfLife,omitempty"`

	// cpuHeadroomPercent is added above the CPU peak, in percent (0-1000).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	CPUHeadroomPercent *int32 `json:"cpuHeadroomPercent,omitempty"`

	// memoryHeadroomPercent is added above the memory peak, in percent (0-1000).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MemoryHeadroomPercent *int32 `json:"memoryHeadroomPercent,omitempty"`
}

// Behavior paces resizes: how long a new recommendation must hold before it
// is applied, how big one step may be, how often one pod is resized and how
// many pods are resized at once. Unset fields without a default keep the
// recommender's tuned values.
type Behavior struct {
	// scaleUp paces raises.
	// +optional
	// +kubebuilder:default={}
	ScaleUp *ScaleUpRules `json:"scaleUp,omitempty"`

	// scaleDown paces lowerings.
	// +optional
	// +kubebuilder:default={}
	ScaleDown *ScaleDownRules `json:"scaleDown,omitempty"`

	// minResizeInterval is the least time between two resizes of one pod,
	// between 0s and 24h. Default 1m: enough for the kubelet to apply one
	// resize and for usage to show its effect before the next.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) <= duration('24h')",message="minResizeInterval must be a duration such as 30s, 5m or 1h, at most 24h"
	MinResizeInterval *metav1.Duration `json:"minResizeInterval,omitempty"`

	// maxConcurrentResizes is how many of this policy's pods may have a
	// resize in progress at once (at least 1). Default 1: a bad
	// recommendation shows on one pod before it reaches the next, and an
	// in-place resize takes seconds.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxConcurrentResizes *int32 `json:"maxConcurrentResizes,omitempty"`
}

// ScaleUpRules paces raises.
type ScaleUpRules struct {
	// stabilizationWindow is how long a higher recommendation must hold
	// before it is applied, between 0s and 24h. Default 0s: a container
	// short of CPU is throttled and one short of memory is killed, so
	// raises go out at once, as HorizontalPodAutoscaler scales up.
	// +optional
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) <= duration('24h')",message="stabilizationWindow must be a duration such as 30s, 5m or 1h, at most 24h"
	StabilizationWindow *metav1.Duration `json:"stabilizationWindow,omitempty"`

	// maxStepPercent bounds one raise to this percent of the current value
	// (1-1000; 100 at most doubles it). Unset: no bound but maxAllowed.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxStepPercent *int32 `json:"maxStepPercent,omitempty"`

	// tolerancePercent is the smallest raise worth a resize, in percent of
	// the current value (0-1000), as in HorizontalPodAutoscaler's
	// tolerance. Unset: the recommender's minimum change.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	TolerancePercent *int32 `json:"tolerancePercent,omitempty"`

	// preemption says whether a raise no room can be made for in place
	// may be sent beyond its node's free room, for the scheduler to evict
	// pods of lower priority on the node until it fits (Kubernetes 1.37's
	// scheduler preemption for resizes, KEP-5836, feature gate
	// InPlacePodVerticalScalingSchedulerPreemption). Never (the default):
	// a raise is never sent for more than the node has free, and nobody
	// is evicted for it. PreemptLowerPriority: once the pods of lower
	// priority tailor manages could give no room in place, the raise may
	// go past the free room, up to what the pods of lower priority on the
	// node request, and is sent when the scheduler would preempt them for
	// it; it is taken back if still deferred a minute later. It takes effect
	// only on a manager started with --allow-resize-preemption: the
	// pods evicted may be other teams'.
	// +optional
	// +kubebuilder:validation:Enum=Never;PreemptLowerPriority
	Preemption ResizePreemption `json:"preemption,omitempty"`
}

// ResizePreemption says whether a raise may be deferred for the scheduler
// to preempt pods of lower priority.
type ResizePreemption string

const (
	// ResizePreemptionNever: a raise is cut to the node's free room.
	ResizePreemptionNever ResizePreemption = "Never"
	// ResizePreemptionLowerPriority: a raise no room in place can be made
	// for may be deferred for the scheduler to preempt for.
	ResizePreemptionLowerPriority ResizePreemption = "PreemptLowerPriority"
)

// ScaleDownRules paces lowerings.
type ScaleDownRules struct {
	// stabilizationWindow is how long a lower recommendation must hold,
	// without interruption, before it is applied, between 0s and 24h, as
	// a duration such as 15m. Unset: the recommender's stabilization.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) <= duration('24h')",message="stabilizationWindow must be a duration such as 30s, 5m or 1h, at most 24h"
	StabilizationWindow *metav1.Duration `json:"stabilizationWindow,omitempty"`

	// maxStepPercent bounds one lowering to this percent of the current
	// value (1-100; 50 at most halves it). Unset: the recommender's step
	// limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxStepPercent *int32 `json:"maxStepPercent,omitempty"`

	// tolerancePercent is how far below the current value, in percent
	// (0-99), a recommendation must fall before a lowering is considered.
	// Unset: the recommender's hysteresis.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=99
	TolerancePercent *int32 `json:"tolerancePercent,omitempty"`

	// canary sends each lowering to a few of the workload's pods first and
	// watches them for a window before the others follow; a lowering that
	// trips a guardrail is rolled back in place at once and the workload's
	// lowerings are held for a backoff. Unset: lowerings go to every pod as
	// maxConcurrentResizes allows. Raises never wait for a canary.
	// +optional
	Canary *Canary `json:"canary,omitempty"`

	// windows are when lowerings may start: a lowering (a canary's
	// included) waits until one of them is open. Unset or empty: always.
	// Raises, a canary's rollback and the end of a startup boost never
	// wait for a window.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Windows []ChangeWindow `json:"windows,omitempty"`

	// budget caps how many of the policy's pods (pods), or of its
	// namespace's pods by every policy of the namespace together
	// (namespacePods), are lowered in any rolling hour. Unset: no cap but
	// maxConcurrentResizes. Raises are never held by it.
	// +optional
	Budget *LoweringBudget `json:"budget,omitempty"`
}

// Condition types of a TailorPolicy, following the API conventions: each is
// True, False or Unknown with a CamelCase reason and a human message.
const (
	// ConditionReady is True when the policy is valid, its target resolves
	// to pods, and tailor acts on it as its mode says. False with a reason
	// such as InvalidPolicy or TargetNotFound otherwise.
	ConditionReady = "Ready"
	// ConditionRecommendationProvided is True when status.recommendation
	// holds a recommendation for every controlled container.
	ConditionRecommendationProvided = "RecommendationProvided"
	// ConditionResizesBlocked is True when a recommended change is not
	// applied, with the reason why (e.g. RestartNotAllowed, Infeasible).
	ConditionResizesBlocked = "ResizesBlocked"
	// ConditionRequestsHeldForHPA is True when a HorizontalPodAutoscaler
	// of the target scales on the utilization of a resource: usage divided
	// by the request, which tailor then keeps as it is, sizing only that
	// resource's limits. The message names the HPA and the resources.
	ConditionRequestsHeldForHPA = "RequestsHeldForHPA"
	// ConditionJVMHeapRestartAdvised is True when a JVM of the policy's
	// pods cannot use its memory limit: the limit is well above what its
	// heap may reach (reason LimitAboveHeapReach), or the heap is full and
	// the recommendation asks for more than it reaches (HeapAtItsMaximum).
	// The message names, per container, the heap option a restart should
	// carry; `tailor report -o patch` writes it into the template. False
	// (HeapFitsLimit) when every JVM's heap fits its limit; absent when no
	// pod runs a JVM.
	ConditionJVMHeapRestartAdvised = "JVMHeapRestartAdvised"
)

// Condition reasons for what the apiserver cannot check. Each comes with an
// event on the policy and a message that says what to change.
const (
	// ReasonInvalidPolicy: the policy passed the apiserver's checks but is
	// still contradictory, e.g. a "*" minAllowed above a named maxAllowed.
	ReasonInvalidPolicy = "InvalidPolicy"
	// ReasonTargetNotFound: targetRef names nothing that exists.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonInvalidSelector: the target workload has no label selector, or
	// one that does not parse. (A malformed spec.selector is InvalidPolicy.)
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonRestartNotAllowed: a change would restart a container whose
	// policy does not set allowRestart.
	ReasonRestartNotAllowed = "RestartNotAllowed"
	// ReasonConflict: another TailorPolicy of the namespace also claims
	// some of the policy's pods and sizes them (a targetRef policy wins
	// over a selector policy, then the older, then the first by name); the
	// message names it. This policy leaves those pods alone.
	ReasonConflict = "Conflict"
	// ReasonVerticalPodAutoscaler: a VerticalPodAutoscaler whose
	// updateMode is not Off sets the resources of the policy's workload
	// (or of some of its pods'); the message names it and its mode. Tailor
	// holds those pods: no resize, no startup boost, no sizing at
	// admission.
	ReasonVerticalPodAutoscaler = "VerticalPodAutoscaler"
	// ReasonQueryOutsideNamespace: a PromQL query of the policy (a
	// canary's query guardrail, or spec.metrics.prometheus) could read
	// series of another namespace: it names one, matches namespaces by a
	// pattern or a negation, or calls a function that reads series it does
	// not select. Tailor asks Prometheus with the manager's credentials,
	// which read every namespace, so it confines each query to the
	// policy's namespace and refuses one it cannot; the message names the
	// query and what to change. The policy is left alone meanwhile.
	ReasonQueryOutsideNamespace = "QueryOutsideNamespace"
)

// TailorPolicyStatus is what tailor recommends and what it last did.
type TailorPolicyStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// recommendation is the most recent recommendation, per container.
	// +optional
	Recommendation *Recommendation `json:"recommendation,omitempty"`

	// pods holds the last resize of each pod tailor resized, most recent
	// first, at most 256 (the oldest are dropped).
	// +optional
	// +listType=map
	// +listMapKey=podName
	// +kubebuilder:validation:MaxItems=256
	Pods []PodResizeStatus `json:"pods,omitempty"`

	// recreations are the resources the replacements of pods tailor evicted
	// are created with: the MutatingAdmissionPolicy tailor-recreate (config/
	// components/eviction) matches a new pod to an entry by its controller's
	// UID and applies them. Each entry lasts ten minutes.
	// +optional
	// +listType=map
	// +listMapKey=ownerUID
	// +kubebuilder:validation:MaxItems=64
	Recreations []Recreation `json:"recreations,omitempty"`

	// admission is what new pods of the target workload are created with:
	// the MutatingAdmissionPolicy tailor-admission applies it to a pod
	// whose controller is the target (or, for a Deployment, one of its
	// ReplicaSets) and whose containers have exactly the requests and
	// limits the entry was planned from. Absent in mode Off.
	// +optional
	Admission *Admission `json:"admission,omitempty"`

	// conditions are Ready, RecommendationProvided, ResizesBlocked,
	// RequestsHeldForHPA, JVMHeapRestartAdvised (where a pod runs a JVM)
	// and, with behavior.scaleDown.canary, Canary.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// Recommendation holds one recommendation per controlled container, as
// VerticalPodAutoscaler's status.recommendation does.
type Recommendation struct {
	// containerRecommendations has one entry per container.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`

	// nodeClasses has one recommendation per class of node the pods run
	// on, with spec.nodeClasses; containerRecommendations is then, per
	// container, the largest of them: the size no class exceeds.
	// +optional
	// +listType=map
	// +listMapKey=class
	// +kubebuilder:validation:MaxItems=64
	NodeClasses []NodeClassRecommendation `json:"nodeClasses,omitempty"`
}

// NodeClassRecommendation is the recommendation for the pods on one class
// of node.
type NodeClassRecommendation struct {
	// class is the nodes' class: their label's value, or their size.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Class string `json:"class"`
	// pods is how many of the workload's pods run on nodes of the class.
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// containerRecommendations has one entry per container.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`
}

// RecommendedContainerResources is the recommendation for one container.
type RecommendedContainerResources struct {
	// containerName is the container's name.
	// +required
	ContainerName string `json:"containerName"`
	// target is the recommended request for the workload's pods, within
	// minAllowed and maxAllowed: learnt from all of them, and what a new
	// pod of the workload is sized at. The name "_pod" stands for the
	// pod-level spec.resources of pods that have them.
	// +optional
	Target corev1.ResourceList `json:"target,omitempty"`
	// lowerBound is the least request the recommender considers safe.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// upperBound is the most request the recommender considers useful.
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// uncappedTarget is target before minAllowed and maxAllowed apply; it
	// differs from target when a bound is what decides.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
	// targetLimit is the memory limit recommended apart from the request:
	// target sizes the request from the typical peak, which the scheduler
	// reserves; targetLimit the limit from the tail of usage, where the
	// kernel kills. Under controlledValues RequestsAndLimits a container's
	// memory limit is the higher of it and the request at the workload's
	// limit/request ratio (a Guaranteed pod's one value the higher of the
	// two); under RequestsOnly, or for a container with no memory limit,
	// it is advice only: no limit is added or moved.
	// +optional
	TargetLimit corev1.ResourceList `json:"targetLimit,omitempty"`
}

// ResizeResult is how a pod's last resize ended.
//
// +kubebuilder:validation:Enum=InProgress;Done;Deferred;Infeasible;Error;Refused;Evicted
type ResizeResult string

const (
	// ResizeResultInProgress: accepted, the kubelet is applying it.
	ResizeResultInProgress ResizeResult = "InProgress"
	// ResizeResultDone: the kubelet applied it.
	ResizeResultDone ResizeResult = "Done"
	// ResizeResultDeferred: the node cannot fit it now; the kubelet retries.
	ResizeResultDeferred ResizeResult = "Deferred"
	// ResizeResultInfeasible: the node can never fit it.
	ResizeResultInfeasible ResizeResult = "Infeasible"
	// ResizeResultError: the kubelet failed to apply it.
	ResizeResultError ResizeResult = "Error"
	// ResizeResultRefused: the apiserver refused the resize.
	ResizeResultRefused ResizeResult = "Refused"
	// ResizeResultEvicted: in-place was impossible and, in mode
	// InPlaceOrRecreate, the pod was evicted to be recreated.
	ResizeResultEvicted ResizeResult = "Evicted"
)

// Recreation is what the replacement of an evicted pod is created with.
// tailor writes it a sync before the eviction, so that the apiserver's
// admission policy has it when the replacement is created, and takes it
// back when the eviction is refused.
type Recreation struct {
	// ownerUID is the UID of the evicted pod's controller (its ReplicaSet,
	// StatefulSet or ReplicationController); new pods it creates match.
	// +required
	// +kubebuilder:validation:MaxLength=128
	OwnerUID string `json:"ownerUID"`
	// ownerKind and ownerName name that controller, for people.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	OwnerKind string `json:"ownerKind,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=253
	OwnerName string `json:"ownerName,omitempty"`
	// evictedPod is the pod tailor evicts, or evicted.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	EvictedPod string `json:"evictedPod,omitempty"`
	// evictionTime is when tailor wrote this entry, a second or a sync
	// before the eviction; the entry expires ten minutes later.
	// +required
	EvictionTime metav1.Time `json:"evictionTime"`
	// observedGeneration is the policy's metadata.generation this entry
	// was planned for; the admission policy applies it only while the
	// policy still has that generation.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// containers are the requests and limits to create each container with;
	// a container not listed keeps its template's. The entry applies to a
	// new pod only when every container it names has exactly its
	// templateRequests and templateLimits: all of them change, or none.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Containers []RecreatedContainer `json:"containers,omitempty"`
}

// RecreatedContainer is one container's resources in a Recreation.
type RecreatedContainer struct {
	// name is the container's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// templateRequests and templateLimits are the container's cpu and
	// memory in the owner's pod template this entry was planned from (the
	// evicted pod itself was resized since it was created); a new pod's
	// container must have exactly these for the entry to apply, so a
	// template edited since is not given resources planned for another.
	// +optional
	TemplateRequests corev1.ResourceList `json:"templateRequests,omitempty"`
	// +optional
	TemplateLimits corev1.ResourceList `json:"templateLimits,omitempty"`
	// requests are the container's cpu and memory requests.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// limits are the container's cpu and memory limits.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// Admission is what new pods of a workload are created with, planned from
// its pod template and the recommendation by the rules of an in-place
// resize: the QoS class is kept, each limit keeps its ratio to its request
// (or stays, under RequestsOnly), no limit is added, and minAllowed and
// maxAllowed hold. A new pod is changed all or not at all: when any of its
// containers differs from the template the entry was planned from (the
// template changed since), it is created as its template says, and sized
// in place once it runs.
type Admission struct {
	// targetKind and targetName name the workload whose new pods match;
	// empty for a selector policy, which names none.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetKind string `json:"targetKind,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TargetName string `json:"targetName,omitempty"`
	// observedGeneration is the policy's metadata.generation this entry
	// was planned for; the admission policy applies it only while the
	// policy still has that generation, so a policy edited since (a
	// startupBoost removed, a maxAllowed lowered) sizes no new pod until
	// the manager has planned for the edit. It is the entry's own, not
	// status.observedGeneration: a status write that does not plan new
	// pods (an invalid policy's) must not mark an older entry current.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// containers are the resources to create each controlled container
	// (and sidecar) with. Empty when new pods are not sized: message says
	// why.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Containers []AdmittedContainer `json:"containers,omitempty"`
	// summary is what a new pod gets, for people; the admission policy
	// copies it to the pod's annotation autoscaling.tailor.dev/admitted.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary,omitempty"`
	// boost is each container's CPU request while a new pod is boosted
	// (spec.startupBoost), as "app=800m"; the admission policy copies it to
	// the pod's annotation autoscaling.tailor.dev/startup-boost, from which
	// tailor removes the boost in place once the pod has started.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Boost string `json:"boost,omitempty"`
	// message says why new pods are created at their template's size,
	// when they are, and which containers a startup boost leaves alone.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// AdmittedContainer is one container's resources in an Admission.
type AdmittedContainer struct {
	// name is the container's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// templateRequests and templateLimits are the container's cpu and
	// memory in the template this entry was planned from; a new pod's
	// container must have exactly these for the entry to apply.
	// +optional
	TemplateRequests corev1.ResourceList `json:"templateRequests,omitempty"`
	// +optional
	TemplateLimits corev1.ResourceList `json:"templateLimits,omitempty"`
	// requests and limits are the cpu and memory the container is created
	// with.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// AdmittedAnnotation is set on a pod created at a size tailor chose: the
// policy's name and what it applied.
const AdmittedAnnotation = "autoscaling.tailor.dev/admitted"

// BoostAnnotation is set on a pod created with a startup boost: each
// boosted container's CPU request while boosted, as "app=800m,proxy=200m".
// tailor reads it to remove the boost in place once the pod has started.
const BoostAnnotation = "autoscaling.tailor.dev/startup-boost"

// PodResizeStatus is the last resize tailor made to one pod.
type PodResizeStatus struct {
	// podName is the pod's name.
	// +required
	PodName string `json:"podName"`
	// lastResizeTime is when tailor sent the resize (or the eviction).
	// +required
	LastResizeTime metav1.Time `json:"lastResizeTime"`
	// result is how it ended, or InProgress.
	// +required
	Result ResizeResult `json:"result"`
	// message says what was changed and, unless Done, why it did not apply.
	// +optional
	Message string `json:"message,omitempty"`
}
