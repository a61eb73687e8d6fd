package resize

// Rule names one Kubernetes resize rule. The values are stable: the CLI prints
// them, policies may match on them, and tests assert them.
//
// Each constant says where the rule lives in Kubernetes v1.37.1 (paths are
// inside the k8s.io/kubernetes module).
type Rule string

const (
	// RuleNone is the Rule of an accepted plan.
	RuleNone Rule = ""

	// RuleServerVersion: in-place resize is beta and on by default from 1.33
	// (pkg/features/kube_features.go, InPlacePodVerticalScaling); older servers
	// ignore or forbid the resize subresource.
	RuleServerVersion Rule = "ServerVersion"

	// RuleStaticPod: "static pods cannot be resized"
	// (pkg/apis/core/validation/validation.go, ValidatePodResize).
	RuleStaticPod Rule = "StaticPod"

	// RuleUnsupportedPlatform: "windows pods cannot be resized" (ValidatePodResize)
	// and, for bound pods, "pod resize is only supported on linux nodes"
	// (plugin/pkg/admission/podresize, validateLinuxNode).
	RuleUnsupportedPlatform Rule = "UnsupportedPlatform"

	// RuleNodeWithoutResize: a running container without status.resources means
	// the kubelet predates resize (ValidatePodResize, isPodResizeRequestSupported).
	RuleNodeWithoutResize Rule = "NodeWithoutResize"

	// RuleUnsupportedResource: "only cpu and memory resources are mutable"
	// (ValidatePodResize, dropCPUMemoryResourcesFromContainer; and
	// validatePodLevelResourcesResize for pod level).
	RuleUnsupportedResource Rule = "UnsupportedResource"

	// RuleNonResizableContainer: ephemeral containers have no resources; on
	// servers before 1.36 "resources for non-sidecar init containers are
	// immutable"; from 1.36 "non-sidecar init containers with a resize policy of
	// RestartContainer cannot be resized" (ValidatePodResize; gate
	// InPlacePodVerticalScalingInitContainers, beta 1.36, GA 1.37).
	RuleNonResizableContainer Rule = "NonResizableContainer"

	// RuleResourceRemoved: "resource requests cannot be removed" / "resource
	// limits cannot be removed" (validateContainerResize), and pod-level
	// "pod-level resource requests/limits cannot be removed"
	// (validatePodLevelResourcesResize).
	RuleResourceRemoved Rule = "ResourceRemoved"

	// RuleRequestsExceedLimits: "must be less than or equal to cpu limit" — the
	// resized pod's whole spec is validated again (ValidatePodResize ->
	// validatePodMetadataAndSpec -> ValidateContainerResourceRequirements and
	// validatePodResourceRequirements for pod level).
	RuleRequestsExceedLimits Rule = "RequestsExceedLimits"

	// RuleQoSClassChange: "Pod QOS Class may not change as a result of resizing"
	// (ValidatePodResize: qos.GetPodQOS(old) != qos.ComputePodQOS(new)).
	RuleQoSClassChange Rule = "QoSClassChange"

	// RuleRestartPolicyNever: resize policies must be NotRequired when the pod's
	// restartPolicy is Never (validateResizePolicy, run on the whole new spec).
	// The apiserver refuses to create such a pod too, so on 1.37 only pods
	// created by older servers can hit it.
	RuleRestartPolicyNever Rule = "RestartPolicyNever"

	// RuleMemoryLimitDecrease: 1.33 only — "memory limits cannot be decreased
	// unless resizePolicy is RestartContainer", and likewise "cannot be added"
	// (v1.33.0 validateContainerResize). 1.34 dropped the rule; the kubelet
	// instead keeps the old limit while usage is above the new one.
	RuleMemoryLimitDecrease Rule = "MemoryLimitDecrease"

	// RulePodLevelResizeDisabled: "resize of pods with pod-level resources is
	// forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate
	// is disabled" (ValidatePodResize). The gate is alpha (off) in 1.35, beta
	// (on) from 1.36.
	RulePodLevelResizeDisabled Rule = "PodLevelResizeDisabled"

	// RulePodLevelRequestsBelowContainers: pod-level requests "must be greater
	// than or equal to aggregate container requests"
	// (validatePodResourceConsistency).
	RulePodLevelRequestsBelowContainers Rule = "PodLevelRequestsBelowContainers"

	// RulePodLevelLimitBelowContainer: a regular container's limit "must be less
	// than or equal to pod limits" (validatePodResourceConsistency). Init
	// containers are not checked and the sum of limits may exceed the pod limit.
	RulePodLevelLimitBelowContainer Rule = "PodLevelLimitBelowContainer"

	// RuleNodeFeatureMissing: from 1.36 the NodeDeclaredFeatureValidator
	// admission plugin refuses, for a bound pod, a resize of pod-level
	// resources or of a non-sidecar init container unless the node lists
	// InPlacePodLevelResourcesVerticalScaling / InPlacePodVerticalScalingInitContainers
	// in status.declaredFeatures (plugin/pkg/admission/nodedeclaredfeatures;
	// k8s.io/component-helpers/nodedeclaredfeatures/features/inplacepodresize).
	RuleNodeFeatureMissing Rule = "NodeFeatureMissing"

	// RuleNodeCapacity: from 1.36 the PodResizeValidator admission plugin
	// refuses a resize of a bound pod whose requests exceed the node's
	// allocatable (plugin/pkg/admission/podresize, validateRequestsWithinAllocatable).
	RuleNodeCapacity Rule = "NodeCapacity"

	// RuleLimitRange: the LimitRanger admission plugin judges a resize as it
	// judges a new pod, its defaults applied first: every container's (and
	// the pod's sums, for a Pod item) requests and limits within each
	// LimitRange's min, max and maxLimitRequestRatio — "maximum cpu usage
	// per Container is 500m, but limit is 600m"
	// (plugin/pkg/admission/limitranger, PodValidateLimitFunc;
	// SupportsAttributes takes pods/resize). The namespace's LimitRanges are
	// Input.Rules; internal/nsrules judges them.
	RuleLimitRange Rule = "LimitRange"

	// RuleResourceQuota: the ResourceQuota admission plugin, the last to run,
	// charges a resize what it adds over the pod (the larger of spec and
	// status) and refuses it past a quota's status.hard — "exceeded quota:
	// NAME, requested: cpu=300m, used: cpu=600m, limited: cpu=800m" — and a
	// pod that leaves out a value a quota counts, or a quota whose usage is
	// not known yet (k8s.io/apiserver pkg/admission/plugin/resourcequota,
	// CheckRequest; pkg/quota/v1/evaluator/core/pods.go handles pods/resize).
	// The namespace's quotas are Input.Rules; internal/nsrules judges them.
	RuleResourceQuota Rule = "ResourceQuota"
)
