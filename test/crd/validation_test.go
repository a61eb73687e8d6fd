//go:build e2e

package crd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/test/cluster"
)

// withTarget is a valid spec head: each invalid case adds one mistake to it.
func withTarget(rest string) string { return minimalSpec + rest }

// containers returns a valid spec with the given containerPolicies list items.
func containers(items string) string {
	return withTarget("resourcePolicy:\n  containerPolicies:\n" + items)
}

const notAllChecked = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// TestRejected covers every validation rule of the CRD: each case is one
// mistake a user can make and the exact lines kubectl would print for it.
func TestRejected(t *testing.T) {
	cluster.Shared(t)
	cases := map[string]struct {
		spec string
		want []string
	}{
		// Which pods.
		"neither targetRef nor selector": {
			spec: `{}`,
			want: []string{"spec: Invalid value: exactly one of targetRef and selector must be set"},
		},
		"both targetRef and selector": {
			spec: withTarget(`selector: {matchLabels: {app: web}}`),
			want: []string{"spec: Invalid value: exactly one of targetRef and selector must be set"},
		},
		"empty selector": {
			spec: `selector: {}`,
			want: []string{"spec.selector: Invalid value: selector must set matchLabels or matchExpressions: an empty selector would select every pod in the namespace"},
		},
		"selector with empty matchLabels": {
			spec: `selector: {matchLabels: {}}`,
			want: []string{"spec.selector: Invalid value: selector must set matchLabels or matchExpressions: an empty selector would select every pod in the namespace"},
		},
		"selector operator unknown": {
			spec: `selector: {matchExpressions: [{key: app, operator: Equals, values: [web]}]}`,
			want: []string{"spec.selector: Invalid value: selector.matchExpressions operator must be In, NotIn, Exists or DoesNotExist"},
		},
		"selector In without values": {
			spec: `selector: {matchExpressions: [{key: app, operator: In}]}`,
			want: []string{"spec.selector: Invalid value: selector.matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"},
		},
		"selector Exists with values": {
			spec: `selector: {matchExpressions: [{key: app, operator: Exists, values: [web]}]}`,
			want: []string{"spec.selector: Invalid value: selector.matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"},
		},
		"nodeClasses on a Deployment": {
			spec: minimalSpec + "nodeClasses: {}\n",
			want: []string{"spec: Invalid value: nodeClasses is for a targetRef of kind DaemonSet, whose pods' load follows their node"},
		},
		"nodeClasses on a selector": {
			spec: "selector: {matchLabels: {app: agent}}\nnodeClasses: {}\n",
			want: []string{"spec: Invalid value: nodeClasses is for a targetRef of kind DaemonSet, whose pods' load follows their node"},
		},
		"nodeClasses label that is no label key": {
			spec: "targetRef: {apiVersion: apps/v1, kind: DaemonSet, name: agent}\nnodeClasses: {label: \"instance type\"}\n",
			want: []string{`spec.nodeClasses.label: Invalid value: "instance type": label must be a label key such as node.kubernetes.io/instance-type`},
		},
		"targetRef apiVersion without version": {
			spec: `targetRef: {apiVersion: apps, kind: Deployment, name: web}`,
			want: []string{`spec.targetRef.apiVersion: Invalid value: "apps": apiVersion must be a group/version such as apps/v1, or v1 for the core group`},
		},
		"targetRef apiVersion with upper case": {
			spec: `targetRef: {apiVersion: Apps/v1, kind: Deployment, name: web}`,
			want: []string{`spec.targetRef.apiVersion: Invalid value: "Apps/v1": apiVersion must be a group/version such as apps/v1, or v1 for the core group`},
		},
		"targetRef without apiVersion": {
			spec: `targetRef: {kind: Deployment, name: web}`,
			want: []string{"spec.targetRef.apiVersion: Required value", notAllChecked},
		},
		"targetRef without kind": {
			spec: `targetRef: {apiVersion: apps/v1, name: web}`,
			want: []string{"spec.targetRef.kind: Required value", notAllChecked},
		},
		"targetRef without name": {
			spec: `targetRef: {apiVersion: apps/v1, kind: Deployment}`,
			want: []string{"spec.targetRef.name: Required value", notAllChecked},
		},
		"targetRef with empty kind and name": {
			spec: `targetRef: {apiVersion: apps/v1, kind: "", name: ""}`,
			want: []string{
				`spec.targetRef.kind: Invalid value: "": spec.targetRef.kind in body should be at least 1 chars long`,
				`spec.targetRef.name: Invalid value: "": spec.targetRef.name in body should be at least 1 chars long`,
			},
		},

		// Update mode.
		"VPA's Auto is not a tailor update mode": {
			spec: withTarget(`updatePolicy: {updateMode: Auto}`),
			want: []string{`spec.updatePolicy.updateMode: Unsupported value: "Auto": supported values: "Off", "InPlace", "InPlaceOrRecreate"`, notAllChecked},
		},
		"bare Off is read as a boolean": {
			spec: withTarget(`updatePolicy: {updateMode: Off}`),
			want: []string{
				`spec.updatePolicy.updateMode: Invalid value: "boolean": spec.updatePolicy.updateMode in body must be of type string: "boolean"`,
				`spec.updatePolicy.updateMode: Unsupported value: false: supported values: "Off", "InPlace", "InPlaceOrRecreate"`,
				notAllChecked,
			},
		},

		// Container policies.
		"'*' twice": {
			spec: containers("  - containerName: '*'\n  - containerName: '*'\n"),
			want: []string{"spec.resourcePolicy.containerPolicies: Invalid value: containerName '*' (the default for every container) may appear only once"},
		},
		"a container named twice": {
			spec: containers("  - containerName: app\n  - containerName: '*'\n  - containerName: app\n"),
			want: []string{"spec.resourcePolicy.containerPolicies: Invalid value: each containerName may appear only once"},
		},
		"containerName not a DNS label": {
			spec: containers("  - containerName: App_1\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].containerName: Invalid value: "App_1": containerName must be a container name (a DNS label such as app) or '*' for every container`},
		},
		"containerName missing": {
			spec: containers("  - mode: Auto\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].containerName: Required value", notAllChecked},
		},
		"more than 32 container policies": {
			spec: containers(strings.Repeat("  - containerName: '*'\n", 33)),
			want: []string{"spec.resourcePolicy.containerPolicies: Too many: 33: must have at most 32 items", notAllChecked},
		},
		"unknown container mode": {
			spec: containers("  - {containerName: app, mode: Recreate}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].mode: Unsupported value: "Recreate": supported values: "Auto", "Off"`, notAllChecked},
		},
		"unknown controlledValues": {
			spec: containers("  - {containerName: app, controlledValues: LimitsOnly}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].controlledValues: Unsupported value: "LimitsOnly": supported values: "RequestsOnly", "RequestsAndLimits"`, notAllChecked},
		},
		"controlledResources names a resource tailor does not size": {
			spec: containers("  - {containerName: app, controlledResources: [cpu, ephemeral-storage]}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].controlledResources: Invalid value: controlledResources may only contain cpu and memory"},
		},
		"controlledResources empty": {
			spec: containers("  - {containerName: app, controlledResources: []}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].controlledResources: Invalid value: controlledResources must not be empty; to leave a container alone set mode: Off"},
		},
		"controlledResources twice the same": {
			spec: containers("  - {containerName: app, controlledResources: [cpu, cpu]}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].controlledResources[1]: Duplicate value: "cpu"`},
		},
		"minAllowed names an unknown resource": {
			spec: containers("  - {containerName: app, minAllowed: {cpu: 100m, nvidia.com/gpu: 1}}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].minAllowed: Invalid value: minAllowed may only name cpu and memory"},
		},
		"maxAllowed names an unknown resource": {
			spec: containers("  - {containerName: app, maxAllowed: {storage: 1Gi}}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].maxAllowed: Invalid value: maxAllowed may only name cpu and memory"},
		},
		"negative minAllowed": {
			spec: containers("  - {containerName: app, minAllowed: {memory: -1Gi}}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].minAllowed: Invalid value: minAllowed values must be non-negative quantities such as 250m, 2 or 512Mi"},
		},
		"zero maxAllowed": {
			spec: containers("  - {containerName: app, maxAllowed: {cpu: 0}}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0].maxAllowed: Invalid value: maxAllowed values must be positive quantities such as 250m, 2 or 512Mi"},
		},
		"maxAllowed not a quantity": {
			spec: containers("  - {containerName: app, maxAllowed: {memory: 1GB}}\n"),
			want: []string{
				`spec.resourcePolicy.containerPolicies[0].maxAllowed.memory: Invalid value: "1GB": spec.resourcePolicy.containerPolicies[0].maxAllowed.memory in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`,
				"spec.resourcePolicy.containerPolicies[0].maxAllowed: Invalid value: maxAllowed values must be positive quantities such as 250m, 2 or 512Mi",
			},
		},
		"minAllowed.cpu above maxAllowed.cpu, integer against milli": {
			spec: containers("  - {containerName: app, minAllowed: {cpu: 2}, maxAllowed: {cpu: 1500m}}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0]: Invalid value: minAllowed.cpu (2) must not exceed maxAllowed.cpu (1500m)"},
		},
		"minAllowed.memory above maxAllowed.memory, binary against decimal": {
			spec: containers("  - {containerName: app, minAllowed: {memory: 1Gi}, maxAllowed: {memory: 1G}}\n"),
			want: []string{"spec.resourcePolicy.containerPolicies[0]: Invalid value: minAllowed.memory (1Gi) must not exceed maxAllowed.memory (1G)"},
		},

		// Recommender overrides.
		"cpuWindow below 1m": {
			spec: containers("  - {containerName: app, recommender: {cpuWindow: 30s}}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].recommender.cpuWindow: Invalid value: "30s": cpuWindow must be a duration such as 30m or 2h, between 1m and 168h`},
		},
		"memoryWindow above 720h": {
			spec: containers("  - {containerName: app, recommender: {memoryWindow: 721h}}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].recommender.memoryWindow: Invalid value: "721h": memoryWindow must be a duration such as 24h or 48h, between 1m and 720h`},
		},
		"jitterHalfLife in words": {
			spec: containers("  - {containerName: app, recommender: {jitterHalfLife: 6 hours}}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].recommender.jitterHalfLife: Invalid value: "6 hours": jitterHalfLife must be a duration such as 6h, between 1m and 720h`},
		},
		"days are not a duration unit": {
			spec: containers("  - {containerName: app, recommender: {memoryWindow: 2d}}\n"),
			want: []string{`spec.resourcePolicy.containerPolicies[0].recommender.memoryWindow: Invalid value: "2d": memoryWindow must be a duration such as 24h or 48h, between 1m and 720h`},
		},
		"headroom out of range": {
			spec: containers("  - {containerName: app, recommender: {cpuHeadroomPercent: -1, memoryHeadroomPercent: 1001}}\n"),
			want: []string{
				"spec.resourcePolicy.containerPolicies[0].recommender.cpuHeadroomPercent: Invalid value: -1: spec.resourcePolicy.containerPolicies[0].recommender.cpuHeadroomPercent in body should be greater than or equal to 0",
				"spec.resourcePolicy.containerPolicies[0].recommender.memoryHeadroomPercent: Invalid value: 1001: spec.resourcePolicy.containerPolicies[0].recommender.memoryHeadroomPercent in body should be less than or equal to 1000",
			},
		},

		// Startup boost.
		"startupBoost with both a factor and an amount": {
			spec: withTarget(`startupBoost: {factorPercent: 200, cpu: "1"}`),
			want: []string{`spec.startupBoost: Invalid value: set exactly one of factorPercent and cpu`},
		},
		"startupBoost with neither": {
			spec: withTarget(`startupBoost: {duration: 30s}`),
			want: []string{`spec.startupBoost: Invalid value: set exactly one of factorPercent and cpu`},
		},
		"startupBoost factor that is no boost": {
			spec: withTarget(`startupBoost: {factorPercent: 100}`),
			want: []string{`spec.startupBoost.factorPercent: Invalid value: 100: spec.startupBoost.factorPercent in body should be greater than or equal to 101`},
		},
		"startupBoost duration above 1h": {
			spec: withTarget(`startupBoost: {cpu: "2", duration: 2h}`),
			want: []string{`spec.startupBoost.duration: Invalid value: "2h": duration must be a duration such as 30s or 2m, at most 1h`},
		},

		// Behavior.
		"recreateAfter is not a duration": {
			spec: withTarget(`updatePolicy: {updateMode: InPlaceOrRecreate, recreateAfter: soon}`),
			want: []string{`spec.updatePolicy.recreateAfter: Invalid value: "soon": recreateAfter must be a duration such as 30s, 5m or 1h, at most 24h`},
		},
		"recreateAfter above 24h": {
			spec: withTarget(`updatePolicy: {updateMode: InPlaceOrRecreate, recreateAfter: 25h}`),
			want: []string{`spec.updatePolicy.recreateAfter: Invalid value: "25h": recreateAfter must be a duration such as 30s, 5m or 1h, at most 24h`},
		},
		"negative scaleUp stabilizationWindow": {
			spec: withTarget(`behavior: {scaleUp: {stabilizationWindow: -1m}}`),
			want: []string{`spec.behavior.scaleUp.stabilizationWindow: Invalid value: "-1m": stabilizationWindow must be a duration such as 30s, 5m or 1h, at most 24h`},
		},
		"scaleUp preemption unknown": {
			spec: withTarget(`behavior: {scaleUp: {preemption: Always}}`),
			want: []string{`spec.behavior.scaleUp.preemption: Unsupported value: "Always": supported values: "Never", "PreemptLowerPriority"`, notAllChecked},
		},
		"scaleDown stabilizationWindow above 24h": {
			spec: withTarget(`behavior: {scaleDown: {stabilizationWindow: 24h0m1s}}`),
			want: []string{`spec.behavior.scaleDown.stabilizationWindow: Invalid value: "24h0m1s": stabilizationWindow must be a duration such as 30s, 5m or 1h, at most 24h`},
		},
		"HPA-style integer seconds are not a duration": {
			spec: withTarget(`behavior: {scaleDown: {stabilizationWindow: "300"}}`),
			want: []string{`spec.behavior.scaleDown.stabilizationWindow: Invalid value: "300": stabilizationWindow must be a duration such as 30s, 5m or 1h, at most 24h`},
		},
		"minResizeInterval above 24h": {
			spec: withTarget(`behavior: {minResizeInterval: 25h}`),
			want: []string{`spec.behavior.minResizeInterval: Invalid value: "25h": minResizeInterval must be a duration such as 30s, 5m or 1h, at most 24h`},
		},
		"scaleUp maxStepPercent zero": {
			spec: withTarget(`behavior: {scaleUp: {maxStepPercent: 0}}`),
			want: []string{"spec.behavior.scaleUp.maxStepPercent: Invalid value: 0: spec.behavior.scaleUp.maxStepPercent in body should be greater than or equal to 1"},
		},
		"scaleDown maxStepPercent above 100": {
			spec: withTarget(`behavior: {scaleDown: {maxStepPercent: 101}}`),
			want: []string{"spec.behavior.scaleDown.maxStepPercent: Invalid value: 101: spec.behavior.scaleDown.maxStepPercent in body should be less than or equal to 100"},
		},
		"tolerance out of range": {
			spec: withTarget(`behavior: {scaleUp: {tolerancePercent: 1001}, scaleDown: {tolerancePercent: 100}}`),
			want: []string{
				"spec.behavior.scaleDown.tolerancePercent: Invalid value: 100: spec.behavior.scaleDown.tolerancePercent in body should be less than or equal to 99",
				"spec.behavior.scaleUp.tolerancePercent: Invalid value: 1001: spec.behavior.scaleUp.tolerancePercent in body should be less than or equal to 1000",
			},
		},
		"maxConcurrentResizes zero": {
			spec: withTarget(`behavior: {maxConcurrentResizes: 0}`),
			want: []string{"spec.behavior.maxConcurrentResizes: Invalid value: 0: spec.behavior.maxConcurrentResizes in body should be greater than or equal to 1"},
		},

		// Canary lowerings.
		"canary of no pods": {
			spec: withTarget(`behavior: {scaleDown: {canary: {pods: 0}}}`),
			want: []string{"spec.behavior.scaleDown.canary.pods: Invalid value: 0: pods must be a count from 1 to 100 or a percent from 1% to 100%, such as 10%"},
		},
		"canary of a percent above 100": {
			spec: withTarget(`behavior: {scaleDown: {canary: {pods: "150%"}}}`),
			want: []string{`spec.behavior.scaleDown.canary.pods: Invalid value: "150%": pods must be a count from 1 to 100 or a percent from 1% to 100%, such as 10%`},
		},
		"canary window under 30s": {
			spec: withTarget(`behavior: {scaleDown: {canary: {window: 10s}}}`),
			want: []string{`spec.behavior.scaleDown.canary.window: Invalid value: "10s": window must be a duration such as 5m or 1h, between 30s and 24h`},
		},
		"canary throttling above 100%": {
			spec: withTarget(`behavior: {scaleDown: {canary: {guardrails: {cpuThrottlingPercent: 101}}}}`),
			want: []string{"spec.behavior.scaleDown.canary.guardrails.cpuThrottlingPercent: Invalid value: 101: spec.behavior.scaleDown.canary.guardrails.cpuThrottlingPercent in body should be less than or equal to 100"},
		},
		"canary backoff initial above max": {
			spec: withTarget(`behavior: {scaleDown: {canary: {backoff: {initial: 2h, max: 1h}}}}`),
			want: []string{"spec.behavior.scaleDown.canary.backoff: Invalid value: backoff.initial must not exceed backoff.max"},
		},

		// Change windows and the lowering budget.
		"window of six fields": {
			spec: withTarget(`behavior: {scaleDown: {windows: [{schedule: "0 0 22 * * *", duration: 1h}]}}`),
			want: []string{`spec.behavior.scaleDown.windows[0].schedule: Invalid value: "0 0 22 * * *": schedule must be five cron fields such as '0 22 * * 1-5' or one of @hourly, @daily, @weekly, @monthly, @yearly; set the time zone in timeZone`},
		},
		"window with a CRON_TZ prefix": {
			spec: withTarget(`behavior: {scaleDown: {windows: [{schedule: "CRON_TZ=UTC 0 22 * * *", duration: 1h}]}}`),
			want: []string{`spec.behavior.scaleDown.windows[0].schedule: Invalid value: "CRON_TZ=UTC 0 22 * * *": schedule must be five cron fields such as '0 22 * * 1-5' or one of @hourly, @daily, @weekly, @monthly, @yearly; set the time zone in timeZone`},
		},
		"window shorter than a minute": {
			spec: withTarget(`behavior: {scaleDown: {windows: [{schedule: "0 22 * * *", duration: 30s}]}}`),
			want: []string{`spec.behavior.scaleDown.windows[0].duration: Invalid value: "30s": duration must be a duration such as 30m or 8h, between 1m and 168h`},
		},
		"window without a duration": {
			spec: withTarget(`behavior: {scaleDown: {windows: [{schedule: "0 22 * * *"}]}}`),
			want: []string{`spec.behavior.scaleDown.windows[0].duration: Required value`, notAllChecked},
		},
		"budget above 100%": {
			spec: withTarget(`behavior: {scaleDown: {budget: {pods: "150%"}}}`),
			want: []string{`spec.behavior.scaleDown.budget.pods: Invalid value: "150%": pods must be a count from 1 to 1000 or a percent from 1% to 100%, such as 10%`},
		},

		// Metrics overrides.
		"empty prometheus query": {
			spec: withTarget(`metrics: {prometheus: {cpu: ""}}`),
			want: []string{`spec.metrics.prometheus.cpu: Invalid value: "": cpu must be a PromQL query; leave it out to keep the manager's`},
		},
		"blank prometheus queries": {
			spec: withTarget("metrics: {prometheus: {memory: \"  \", throttled: \"\\t\", timestamp: \"\\n\"}}"),
			want: []string{
				`spec.metrics.prometheus.memory: Invalid value: "  ": memory must be a PromQL query; leave it out to keep the manager's`,
				`spec.metrics.prometheus.throttled: Invalid value: "\t": throttled must be a PromQL query; leave it out to keep the manager's`,
				`spec.metrics.prometheus.timestamp: Invalid value: "\n": timestamp must be a PromQL query; leave it out to keep the manager's`,
			},
		},
		// Issue #34: what a policy makes the manager ask Prometheus is
		// bounded: four guardrails, 1 KiB a query.
		"prometheus query over 1024 characters": {
			spec: withTarget("metrics: {prometheus: {cpu: " + strings.Repeat("x", 1025) + "}}"),
			want: []string{"spec.metrics.prometheus.cpu: Too long: may not be more than 1024 bytes", notAllChecked},
		},
		"guardrail query over 1024 characters": {
			spec: withTarget(`behavior: {scaleDown: {canary: {guardrails: {queries: [{name: q, threshold: "1", query: ` + strings.Repeat("x", 1025) + `}]}}}}`),
			want: []string{"spec.behavior.scaleDown.canary.guardrails.queries[0].query: Too long: may not be more than 1024 bytes", notAllChecked},
		},
		"five guardrail queries": {
			spec: withTarget(`behavior: {scaleDown: {canary: {guardrails: {queries: [` +
				`{name: a, threshold: "1", query: up}, {name: b, threshold: "1", query: up}, {name: c, threshold: "1", query: up},` +
				`{name: d, threshold: "1", query: up}, {name: e, threshold: "1", query: up}]}}}}`),
			want: []string{"spec.behavior.scaleDown.canary.guardrails.queries: Too many: 5: must have at most 4 items", notAllChecked},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := causes(dryRunCreate(context.Background(), policy(tc.spec)))
			if got == nil {
				t.Fatalf("the apiserver accepted:\n%s", tc.spec)
			}
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rejection (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAccepted covers the edges each rule must let through, and checks the
// defaults the apiserver fills in, since users see them in kubectl get -o yaml.
func TestAccepted(t *testing.T) {
	cluster.Shared(t)
	cases := map[string]struct {
		spec string
		// wantSpec, when set, is the whole spec the apiserver returns.
		wantSpec string
	}{
		"minimal targetRef gets the documented defaults": {
			spec: minimalSpec,
			wantSpec: `
targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
updatePolicy: {updateMode: InPlace, recreateAfter: 5m}
behavior:
  scaleUp: {stabilizationWindow: 0s}
  scaleDown: {}
  minResizeInterval: 1m
  maxConcurrentResizes: 1
`,
		},
		"nodeClasses on a DaemonSet, by a label": {
			spec: "targetRef: {apiVersion: apps/v1, kind: DaemonSet, name: agent}\nnodeClasses: {label: node.kubernetes.io/instance-type}\n",
		},
		"scaleUp preemption of lower priority": {
			spec: withTarget(`behavior: {scaleUp: {preemption: PreemptLowerPriority}}`),
		},
		"nodeClasses by size": {
			spec: "targetRef: {apiVersion: apps/v1, kind: DaemonSet, name: agent}\nnodeClasses: {}\n",
		},
		"selector with matchExpressions only": {
			spec: `selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}`,
		},
		"selector with Exists and NotIn": {
			spec: `selector: {matchExpressions: [{key: app, operator: Exists}, {key: tier, operator: NotIn, values: [batch]}]}`,
		},
		"core group apiVersion": {
			spec: `targetRef: {apiVersion: v1, kind: ReplicationController, name: web}`,
		},
		"custom resource with a scale subresource": {
			spec: `targetRef: {apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: web}`,
		},
		"min equal to max, integer and string quantities": {
			spec: containers("  - {containerName: '*', minAllowed: {cpu: 1, memory: 1Gi}, maxAllowed: {cpu: 1000m, memory: 1024Mi}}\n"),
		},
		"zero minAllowed": {
			spec: containers("  - {containerName: app, minAllowed: {cpu: 0, memory: \"0\"}}\n"),
		},
		"bounds on different resources are not compared": {
			spec: containers("  - {containerName: app, minAllowed: {cpu: 100}, maxAllowed: {memory: 1Mi}}\n"),
		},
		"min above max in different entries is the controller's to report": {
			spec: containers("  - {containerName: '*', minAllowed: {memory: 2Gi}}\n  - {containerName: app, maxAllowed: {memory: 1Gi}}\n"),
		},
		"32 container policies": {
			spec: containers(func() string {
				var b strings.Builder
				for i := range 32 {
					fmt.Fprintf(&b, "  - containerName: c%d\n", i)
				}
				return b.String()
			}()),
		},
		"duration edges, as Go prints them": {
			spec: withTarget(`
behavior:
  scaleUp: {stabilizationWindow: 0s, maxStepPercent: 1000, tolerancePercent: 0}
  scaleDown: {stabilizationWindow: 24h0m0s, maxStepPercent: 100, tolerancePercent: 99}
  minResizeInterval: 1h30m0.5s
  maxConcurrentResizes: 10000
resourcePolicy:
  containerPolicies:
  - containerName: app
    recommender: {cpuWindow: 1m, memoryWindow: 720h, jitterHalfLife: 90m, cpuHeadroomPercent: 0, memoryHeadroomPercent: 1000}
`),
		},
		"an empty canary gets the documented defaults": {
			spec: withTarget(`behavior: {scaleDown: {canary: {}}}`),
			wantSpec: `
targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
updatePolicy: {updateMode: InPlace, recreateAfter: 5m}
behavior:
  scaleUp: {stabilizationWindow: 0s}
  scaleDown:
    canary:
      pods: 1
      window: 10m
      guardrails: {oomKill: true, restart: true, readiness: true, cpuThrottling: true, cpuThrottlingPercent: 20, memoryNearLimit: true, memoryMarginPercent: 5}
      backoff: {initial: 1h, max: 24h}
  minResizeInterval: 1m
  maxConcurrentResizes: 1
`,
		},
		"change windows in a time zone and a budget": {
			spec: withTarget(`behavior: {scaleDown: {windows: [{schedule: "0 22 * * 1-5", duration: 8h, timeZone: Europe/Berlin}, {schedule: "@daily", duration: 1h}], budget: {pods: "10%"}}}`),
		},
		"canary of a percent": {
			spec: withTarget(`behavior: {scaleDown: {canary: {pods: "10%", window: 24h, backoff: {initial: 1m, max: 1m}}}}`),
		},
		"quoted Off": {
			spec: withTarget(`updatePolicy: {updateMode: "Off"}`),
		},
		"prometheus queries are kept as written": {
			spec: withTarget(`
metrics:
  prometheus:
    cpu: 'sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{namespace="{{.Namespace}}", pod=~"{{.Pods}}"}[{{.Window}}]))'
    memory: 'max by (namespace, pod, container) (container_memory_working_set_bytes{namespace="{{.Namespace}}", pod=~"{{.Pods}}"})'
`),
			wantSpec: `
targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
updatePolicy: {updateMode: InPlace, recreateAfter: 5m}
behavior:
  scaleUp: {stabilizationWindow: 0s}
  scaleDown: {}
  minResizeInterval: 1m
  maxConcurrentResizes: 1
metrics:
  prometheus:
    cpu: 'sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{namespace="{{.Namespace}}", pod=~"{{.Pods}}"}[{{.Window}}]))'
    memory: 'max by (namespace, pod, container) (container_memory_working_set_bytes{namespace="{{.Namespace}}", pod=~"{{.Pods}}"})'
`,
		},
		"a template the apiserver cannot judge is the controller's to report": {
			spec: withTarget(`metrics: {prometheus: {throttled: "rate(x[{{.Window}])"}}`),
		},
		"a prometheus query of 1024 characters": {
			spec: withTarget("metrics: {prometheus: {timestamp: " + strings.Repeat("x", 1024) + "}}"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			obj := policy(tc.spec)
			got, err := dyn.Resource(policyGVR).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("rejected: %s\nspec:\n%s", strings.Join(causes(err), "\n"), tc.spec)
			}
			if tc.wantSpec == "" {
				return
			}
			var want map[string]any
			if err := yaml.Unmarshal([]byte(tc.wantSpec), &want); err != nil {
				t.Fatal(err)
			}
			// Through JSON, so that numbers compare the same on both sides.
			gotJSON, err := json.Marshal(got.Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			var gotSpec map[string]any
			if err := json.Unmarshal(gotJSON, &gotSpec); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, gotSpec); diff != "" {
				t.Errorf("stored spec (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSamples submits config/samples as they are, so the README's examples
// are known to be accepted.
func TestSamples(t *testing.T) {
	cluster.Shared(t)
	_, this, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(this), "..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var obj unstructured.Unstructured
			if err := yaml.Unmarshal(data, &obj.Object); err != nil {
				t.Fatal(err)
			}
			obj.SetNamespace(namespace)
			if err := dryRunCreate(context.Background(), &obj); err != nil {
				t.Errorf("rejected: %s", strings.Join(causes(err), "\n"))
			}
		})
	}
}
