package resize

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/test/builder"
)

var (
	v132 = Version{1, 32}
	v133 = Version{1, 33}
	v134 = Version{1, 34}
	v135 = Version{1, 35}
	v137 = Version{1, 37}
)

const (
	guaranteed = corev1.PodQOSGuaranteed
	burstable  = corev1.PodQOSBurstable
	bestEffort = corev1.PodQOSBestEffort
)

func set(requests, limits corev1.ResourceList) map[string]corev1.ResourceRequirements {
	return map[string]corev1.ResourceRequirements{"app": builder.Requirements(requests, limits)}
}

func req(cpu, mem string) corev1.ResourceList { return builder.List(cpu, mem) }

// burstablePod is a one-container Burstable pod.
func burstablePod() *builder.PodWrapper {
	return builder.Pod("p").Namespace("ns").ResourceVersion("42").
		Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi"))
}

func guaranteedPod() *builder.PodWrapper {
	return builder.Pod("p").Namespace("ns").ResourceVersion("42").
		Container(builder.Container("app").Requests("1", "512Mi").Limits("1", "512Mi"))
}

// summary is the part of a Result the table compares; Patch and messages get their own checks.
type summary struct {
	Outcome   Outcome
	Rule      Rule
	Predicted Prediction
	NoChange  bool
	QoS       [2]corev1.PodQOSClass
	Changed   []string
	Restarted []string
}

func summarize(r *Result) summary {
	s := summary{Outcome: r.Outcome, Rule: r.Rule, Predicted: r.Predicted, NoChange: r.NoChange, QoS: [2]corev1.PodQOSClass{r.QoSBefore, r.QoSAfter}}
	for _, c := range r.Containers {
		if c.Changed {
			s.Changed = append(s.Changed, c.Name)
		}
		if c.Restart {
			s.Restarted = append(s.Restarted, c.Name)
		}
	}
	return s
}

func TestPlan(t *testing.T) {
	cases := map[string]struct {
		in Input

		wantErr       string
		wantSummary   summary
		wantMessage   string // substring of Result.Message
		wantPatch     string // exact JSON when set
		wantNilPatch  bool
		wantWarnings  int
		wantRestartBy string // substring of the first restarted container's reason
	}{
		"burstable cpu request increase is applied in place": {
			in:          Input{Pod: burstablePod().Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("750m", ""), nil)}},
			wantSummary: summary{Outcome: Accepted, Predicted: InPlace, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantPatch:   `{"metadata":{"resourceVersion":"42"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"750m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}}}]}}`,
		},
		"desired equal to current is an explicit no-change with no patch": {
			in:           Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Containers: set(req("0.5", "256Mi"), nil)}},
			wantSummary:  summary{Outcome: Accepted, Predicted: InPlace, NoChange: true, QoS: [2]corev1.PodQOSClass{burstable, burstable}},
			wantNilPatch: true,
		},
		"unknown container is an input error naming the valid containers": {
			in:      Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"ap": {}}}},
			wantErr: `container "ap" is not in the pod; valid names: app`,
		},
		"missing server version is an input error": {
			in:      Input{Pod: burstablePod().Obj(), Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantErr: "server version is not set",
		},
		"negative quantity is an input error": {
			in:      Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Containers: set(req("-1", ""), nil)}},
			wantErr: "negative",
		},
		"server before 1.33 cannot resize": {
			in:          Input{Pod: burstablePod().Obj(), Server: v132, Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleServerVersion, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"static pod is refused": {
			in:          Input{Pod: burstablePod().Annotation("kubernetes.io/config.mirror", "x").Obj(), Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleStaticPod, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"windows pod is refused": {
			in:          Input{Pod: burstablePod().OS(corev1.Windows).Obj(), Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleUnsupportedPlatform, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"running container without status resources means the kubelet cannot resize": {
			in: Input{Pod: burstablePod().ContainerStatus(corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}).Obj(),
				Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNodeWithoutResize, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"ephemeral-storage cannot change": {
			in: Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Containers: map[string]corev1.ResourceRequirements{
				"app": {Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: builder.List("1", "")[corev1.ResourceCPU]}}}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleUnsupportedResource, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantMessage: "only cpu and memory resources are mutable",
		},
		"ephemeral container is not resizable": {
			in:          Input{Pod: burstablePod().EphemeralContainer("debug").Obj(), Server: v137, Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"debug": builder.Requirements(req("1", ""), nil)}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNonResizableContainer, QoS: [2]corev1.PodQOSClass{burstable, burstable}},
		},
		"removing a cpu limit is refused and the patch deletes it": {
			in:          Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Remove: map[string]Removal{"app": {Limits: []corev1.ResourceName{corev1.ResourceCPU}}}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleResourceRemoved, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantMessage: "resource limits cannot be removed (cpu)",
			wantPatch:   `{"metadata":{"resourceVersion":"42"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":null,"memory":"512Mi"}}}]}}`,
		},
		"request above limit is refused": {
			in:          Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Containers: set(req("2", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleRequestsExceedLimits, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantMessage: "must be less than or equal to cpu limit of 1",
		},
		"guaranteed pod changing only the cpu request would become burstable": {
			in:          Input{Pod: guaranteedPod().Obj(), Server: v137, Desired: Desired{Containers: set(req("500m", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleQoSClassChange, QoS: [2]corev1.PodQOSClass{guaranteed, burstable}, Changed: []string{"app"}},
			wantMessage: "Pod QOS Class may not change",
		},
		"guaranteed pod resizing requests and limits together stays guaranteed": {
			in:          Input{Pod: guaranteedPod().Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("2", "1Gi"), req("2", "1Gi"))}},
			wantSummary: summary{Outcome: Accepted, Predicted: InPlace, QoS: [2]corev1.PodQOSClass{guaranteed, guaranteed}, Changed: []string{"app"}},
		},
		"burstable pod reaching requests == limits would become guaranteed": {
			in:          Input{Pod: burstablePod().Obj(), Server: v137, Desired: Desired{Containers: set(req("1", "512Mi"), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleQoSClassChange, QoS: [2]corev1.PodQOSClass{burstable, guaranteed}, Changed: []string{"app"}},
		},
		"status qosClass is the class the apiserver compares against": {
			in:          Input{Pod: burstablePod().QOS(guaranteed).Obj(), Server: v137, Desired: Desired{Containers: set(req("600m", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleQoSClassChange, QoS: [2]corev1.PodQOSClass{guaranteed, burstable}, Changed: []string{"app"}},
		},
		"adding a limit without a request defaults the request and may change the class": {
			in: Input{Pod: builder.Pod("p").Container(builder.Container("app").Requests("500m", "")).Obj(), Server: v137,
				Desired: Desired{Containers: set(nil, req("", "1Gi"))}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantPatch:   `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"memory":"1Gi"}}}]}}`,
		},
		"best-effort pod cannot gain requests": {
			in:          Input{Pod: builder.Pod("p").Container(builder.Container("app")).Obj(), Server: v137, Desired: Desired{Containers: set(req("100m", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleQoSClassChange, QoS: [2]corev1.PodQOSClass{bestEffort, burstable}, Changed: []string{"app"}},
			wantMessage: "BestEffort",
		},
		"sidecar is resizable": {
			in: Input{Pod: burstablePod().Sidecar(builder.Container("proxy").Requests("100m", "64Mi")).Obj(), Server: v137,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"proxy": builder.Requirements(req("200m", ""), nil)}}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"proxy"}},
			wantPatch:   `{"metadata":{"resourceVersion":"42"},"spec":{"initContainers":[{"name":"proxy","resources":{"requests":{"cpu":"200m","memory":"64Mi"}}}]}}`,
		},
		"non-sidecar init container is resizable on 1.37": {
			in: Input{Pod: burstablePod().InitContainer(builder.Container("setup").Requests("100m", "")).Obj(), Server: v137,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"setup": builder.Requirements(req("200m", ""), nil)}}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"setup"}},
		},
		"non-sidecar init container is immutable before 1.36": {
			in: Input{Pod: burstablePod().InitContainer(builder.Container("setup").Requests("100m", "")).Obj(), Server: v135,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"setup": builder.Requirements(req("200m", ""), nil)}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNonResizableContainer, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"setup"}},
		},
		"non-sidecar init container with RestartContainer policy is not resizable": {
			in: Input{Pod: burstablePod().InitContainer(builder.Container("setup").Requests("100m", "").ResizePolicy(corev1.ResourceCPU, corev1.RestartContainer)).Obj(), Server: v137,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"setup": builder.Requirements(req("200m", ""), nil)}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNonResizableContainer, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"setup"}, Restarted: []string{"setup"}},
			wantMessage: "RestartContainer cannot be resized",
		},
		"restartPolicy Never needs NotRequired policies": {
			in: Input{Pod: builder.Pod("p").RestartPolicy(corev1.RestartPolicyNever).
				Container(builder.Container("app").Requests("500m", "").ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(),
				Server: v137, Desired: Desired{Containers: set(req("600m", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RuleRestartPolicyNever, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"restart policy RestartContainer restarts the container": {
			in: Input{Pod: builder.Pod("p").Node("n").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi").
				ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(), Server: v137, Desired: Desired{Containers: set(nil, req("", "1Gi"))}},
			wantSummary:   summary{Outcome: Accepted, Predicted: InPlace, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}, Restarted: []string{"app"}},
			wantRestartBy: "memory limit 512Mi -> 1Gi with resizePolicy RestartContainer",
		},
		"cpu change does not restart a container whose memory policy is RestartContainer": {
			in: Input{Pod: builder.Pod("p").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi").
				ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(), Server: v137, Desired: Desired{Containers: set(req("700m", ""), nil)}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"memory limit decrease is refused on 1.33 without RestartContainer": {
			in:          Input{Pod: burstablePod().Obj(), Server: v133, Desired: Desired{Containers: set(nil, req("", "300Mi"))}},
			wantSummary: summary{Outcome: Refused, Rule: RuleMemoryLimitDecrease, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"adding a memory limit is refused on 1.33 without RestartContainer": {
			in: Input{Pod: builder.Pod("p").Container(builder.Container("app").Requests("500m", "256Mi")).Obj(), Server: v133,
				Desired: Desired{Containers: set(nil, req("", "1Gi"))}},
			wantSummary: summary{Outcome: Refused, Rule: RuleMemoryLimitDecrease, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantMessage: "memory limits cannot be added",
		},
		"memory limit decrease is allowed on 1.33 with RestartContainer": {
			in: Input{Pod: builder.Pod("p").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi").
				ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(), Server: v133, Desired: Desired{Containers: set(nil, req("", "300Mi"))}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}, Restarted: []string{"app"}},
		},
		"memory limit decrease is allowed from 1.34 with a usage warning": {
			in:           Input{Pod: burstablePod().Obj(), Server: v134, Desired: Desired{Containers: set(nil, req("", "300Mi"))}},
			wantSummary:  summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantWarnings: 1,
		},
		"pod-level requests below the containers' sum are refused": {
			in: Input{Pod: builder.Pod("p").PodRequests("1", "1Gi").PodLimits("2", "2Gi").
				Container(builder.Container("a").Requests("500m", "")).Container(builder.Container("app").Requests("400m", "")).Obj(),
				Server: v137, Desired: Desired{Containers: set(req("600m", ""), nil)}},
			wantSummary: summary{Outcome: Refused, Rule: RulePodLevelRequestsBelowContainers, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"a container limit above the pod-level limit is refused": {
			in: Input{Pod: builder.Pod("p").PodRequests("1", "1Gi").PodLimits("2", "2Gi").
				Container(builder.Container("app").Requests("500m", "").Limits("1", "")).Obj(),
				Server: v137, Desired: Desired{Containers: set(nil, req("3", ""))}},
			wantSummary: summary{Outcome: Refused, Rule: RulePodLevelLimitBelowContainer, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"the sum of container limits may exceed the pod-level limit": {
			in: Input{Pod: builder.Pod("p").PodRequests("1", "1Gi").PodLimits("2", "2Gi").
				Container(builder.Container("a").Requests("100m", "").Limits("1500m", "")).
				Container(builder.Container("app").Requests("100m", "").Limits("1", "")).Obj(),
				Server: v137, Desired: Desired{Containers: set(nil, req("2", ""))}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"pod-level resize is disabled on 1.35": {
			in: Input{Pod: builder.Pod("p").PodRequests("1", "1Gi").Container(builder.Container("app").Requests("500m", "")).Obj(),
				Server: v135, Desired: Desired{Pod: &corev1.ResourceRequirements{Requests: req("2", "")}}},
			wantSummary: summary{Outcome: Refused, Rule: RulePodLevelResizeDisabled, QoS: [2]corev1.PodQOSClass{burstable, burstable}},
		},
		"pod-level limit cannot be removed": {
			in: Input{Pod: builder.Pod("p").PodRequests("1", "1Gi").PodLimits("2", "").Container(builder.Container("app").Requests("500m", "")).Obj(),
				Server: v137, Desired: Desired{RemoveFromPod: &Removal{Limits: []corev1.ResourceName{corev1.ResourceCPU}}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleResourceRemoved, QoS: [2]corev1.PodQOSClass{burstable, burstable}},
			wantMessage: "pod-level resource limits cannot be removed",
		},
		"pod-level guaranteed pod keeps its class when only containers change": {
			in: Input{Pod: builder.Pod("p").PodRequests("2", "1Gi").PodLimits("2", "1Gi").Container(builder.Container("app").Requests("500m", "")).Obj(),
				Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantSummary: summary{Outcome: Accepted, Predicted: Unscheduled, QoS: [2]corev1.PodQOSClass{guaranteed, guaranteed}, Changed: []string{"app"}},
		},
		// Seed 002: a container without its own memory limit runs under the
		// pod-level limit, so raising that limit restarts it when its memory
		// policy is RestartContainer, although the container itself is unchanged.
		"pod-level limit change restarts a container that inherits it": {
			in: Input{Pod: builder.Pod("p").Node("n").PodRequests("1", "512Mi").PodLimits("2", "1Gi").
				Container(builder.Container("app").Requests("500m", "256Mi").ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).
				Container(builder.Container("own").Requests("100m", "64Mi").Limits("", "128Mi").ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(),
				Server: v137, Desired: Desired{Pod: &corev1.ResourceRequirements{Limits: req("", "2Gi")}}},
			wantSummary:   summary{Outcome: Accepted, Predicted: InPlace, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Restarted: []string{"app"}},
			wantRestartBy: "memory limit 1Gi -> 2Gi (effective limit from the pod-level limit)",
			wantPatch:     `{"spec":{"resources":{"requests":{"cpu":"1","memory":"512Mi"},"limits":{"cpu":"2","memory":"2Gi"}}}}`,
		},
		"exceeding node allocatable is refused at admission from 1.36": {
			in: Input{Pod: burstablePod().Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("3", ""), req("4", ""))},
				Node: &NodeState{Allocatable: req("2", "4Gi")}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNodeCapacity, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
			wantMessage: "node didn't have enough allocatable resources: cpu",
		},
		"exceeding node allocatable before 1.36 is accepted but infeasible": {
			in: Input{Pod: burstablePod().Node("n").Obj(), Server: v135, Desired: Desired{Containers: set(req("3", ""), req("4", ""))},
				Node: &NodeState{Allocatable: req("2", "4Gi")}},
			wantSummary: summary{Outcome: Accepted, Predicted: Infeasible, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"non-linux node is refused at admission": {
			in: Input{Pod: burstablePod().Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("600m", ""), nil)},
				Node: &NodeState{Allocatable: req("2", "4Gi"), Labels: map[string]string{corev1.LabelOSStable: "windows"}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleUnsupportedPlatform, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"pod-level resize on a bound pod needs the node to declare the feature": {
			in: Input{Pod: builder.Pod("p").Node("n").PodRequests("1", "1Gi").Container(builder.Container("app").Requests("500m", "")).Obj(),
				Server: v137, Desired: Desired{Pod: &corev1.ResourceRequirements{Requests: req("2", "")}},
				Node: &NodeState{Allocatable: req("4", "8Gi"), DeclaredFeatures: []string{"InPlacePodVerticalScalingInitContainers"}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNodeFeatureMissing, QoS: [2]corev1.PodQOSClass{burstable, burstable}},
			wantMessage: "requires features InPlacePodLevelResourcesVerticalScaling",
		},
		"pod-level resize on a node declaring the feature is accepted": {
			in: Input{Pod: builder.Pod("p").Node("n").PodRequests("1", "1Gi").Container(builder.Container("app").Requests("500m", "")).Obj(),
				Server: v137, Desired: Desired{Pod: &corev1.ResourceRequirements{Requests: req("2", "")}},
				Node: &NodeState{Allocatable: req("4", "8Gi"), DeclaredFeatures: []string{"InPlacePodLevelResourcesVerticalScaling"}}},
			wantSummary: summary{Outcome: Accepted, Predicted: InPlace, QoS: [2]corev1.PodQOSClass{burstable, burstable}},
		},
		"non-sidecar init resize on a bound pod needs the node to declare the feature": {
			in: Input{Pod: burstablePod().Node("n").InitContainer(builder.Container("setup").Requests("100m", "")).Obj(), Server: v137,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"setup": builder.Requirements(req("200m", ""), nil)}},
				Node:    &NodeState{Allocatable: req("4", "8Gi"), DeclaredFeatures: []string{}}},
			wantSummary: summary{Outcome: Refused, Rule: RuleNodeFeatureMissing, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"setup"}},
			wantMessage: "InPlacePodVerticalScalingInitContainers",
		},
		"fits the node but not what is free now is deferred": {
			in: Input{Pod: burstablePod().UID("me").Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)},
				Node: &NodeState{Allocatable: req("2", "4Gi"), Pods: []*corev1.Pod{
					burstablePod().UID("me").Node("n").Obj(), // the resized pod itself is skipped
					builder.Pod("other").UID("o").Node("n").Container(builder.Container("c").Requests("1200m", "1Gi")).Obj(),
				}}},
			wantSummary: summary{Outcome: Accepted, Predicted: Deferred, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"another pod mid-resize counts at its larger allocated size": {
			in: Input{Pod: burstablePod().UID("me").Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)},
				Node: &NodeState{Allocatable: req("2", "4Gi"), Pods: []*corev1.Pod{
					builder.Pod("shrinking").UID("s").Node("n").Container(builder.Container("c").Requests("500m", "1Gi")).
						ContainerStatus(corev1.ContainerStatus{Name: "c", AllocatedResources: req("1500m", "1Gi")}).Obj(),
				}}},
			wantSummary: summary{Outcome: Accepted, Predicted: Deferred, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
		"terminal pods do not take room": {
			in: Input{Pod: burstablePod().UID("me").Node("n").Obj(), Server: v137, Desired: Desired{Containers: set(req("1", ""), nil)},
				Node: &NodeState{Allocatable: req("2", "4Gi"), Pods: []*corev1.Pod{
					builder.Pod("done").UID("d").Node("n").Phase(corev1.PodSucceeded).Container(builder.Container("c").Requests("1500m", "1Gi")).Obj(),
				}}},
			wantSummary: summary{Outcome: Accepted, Predicted: InPlace, QoS: [2]corev1.PodQOSClass{burstable, burstable}, Changed: []string{"app"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Plan(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Plan() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Plan() unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.wantSummary, summarize(got)); diff != "" {
				t.Errorf("Plan() summary (-want,+got):\n%s\nmessage: %s", diff, got.Message)
			}
			if tc.wantMessage != "" && !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("Plan() message = %q, want it to contain %q", got.Message, tc.wantMessage)
			}
			if tc.wantPatch != "" {
				if diff := cmp.Diff(tc.wantPatch, string(got.Patch)); diff != "" {
					t.Errorf("Plan() patch (-want,+got):\n%s", diff)
				}
			}
			if tc.wantNilPatch != (got.Patch == nil) {
				t.Errorf("Plan() patch = %s, want nil: %v", got.Patch, tc.wantNilPatch)
			}
			if len(got.Warnings) != tc.wantWarnings {
				t.Errorf("Plan() warnings = %q, want %d", got.Warnings, tc.wantWarnings)
			}
			if tc.wantRestartBy != "" {
				var reason string
				for _, c := range got.Containers {
					if c.Restart {
						reason = c.RestartReason
						break
					}
				}
				if !strings.Contains(reason, tc.wantRestartBy) {
					t.Errorf("restart reason = %q, want it to contain %q", reason, tc.wantRestartBy)
				}
			}
		})
	}
}
