package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manifest"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// containersText is each planned container as
// "name[ init] requests=cpu:..,memory:.. limits=..", entries it sets only.
func containersText(cs []manifest.Container) []string {
	text := func(l corev1.ResourceList) string {
		var parts []string
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[r]; ok {
				parts = append(parts, fmt.Sprintf("%s:%s", r, q.String()))
			}
		}
		return strings.Join(parts, ",")
	}
	var out []string
	for _, c := range cs {
		name := c.Name
		if c.Init {
			name += " init"
		}
		out = append(out, fmt.Sprintf("%s requests=%s limits=%s", name, text(c.Requests), text(c.Limits)))
	}
	return out
}

func TestPlanTemplate(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	requestsOnly := v1alpha1.ControlledValuesRequestsOnly
	template := func(cs ...*builder.ContainerWrapper) *corev1.PodTemplateSpec {
		tpl := &corev1.PodTemplateSpec{}
		for _, c := range cs {
			tpl.Spec.Containers = append(tpl.Spec.Containers, *c.Obj())
		}
		return tpl
	}
	app := builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")
	rec := func(container, cpu, memory string) Row {
		return Row{Container: container, Recommended: builder.List(cpu, memory)}
	}
	policy := func(spec v1alpha1.TailorPolicySpec) *v1alpha1.TailorPolicy {
		return &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: spec}
	}
	cases := map[string]struct {
		template *corev1.PodTemplateSpec
		policy   *v1alpha1.TailorPolicy
		rows     []Row
		rules    *nsrules.Rules
		hpas     []autoscalingv2.HorizontalPodAutoscaler
		want     []string
		wantHeld string
	}{
		"RequestsAndLimits: limits keep their ratio, a policy in mode Off included": {
			template: template(app),
			policy:   policy(v1alpha1.TailorPolicySpec{UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}}),
			rows:     []Row{rec("app", "200m", "300Mi")},
			want:     []string{"app requests=cpu:200m,memory:300Mi limits=cpu:400m,memory:600Mi"},
		},
		"a memory limit recommended apart: a 1:1 template's limit goes to it, not to the request": {
			template: template(builder.Container("app").Requests("500m", "256Mi").Limits("1", "256Mi")),
			rows:     []Row{{Container: "app", Recommended: builder.List("200m", "300Mi"), RecommendedLimit: builder.List("", "556Mi")}},
			want:     []string{"app requests=cpu:200m,memory:300Mi limits=cpu:400m,memory:556Mi"},
		},
		"a memory limit recommended apart: the template's ratio holds it up where higher": {
			template: template(app),
			rows:     []Row{{Container: "app", Recommended: builder.List("200m", "300Mi"), RecommendedLimit: builder.List("", "556Mi")}},
			want:     []string{"app requests=cpu:200m,memory:300Mi limits=cpu:400m,memory:600Mi"},
		},
		"a Guaranteed template's one memory value is sized as a limit": {
			template: template(builder.Container("app").Requests("1", "256Mi").Limits("1", "256Mi")),
			rows:     []Row{{Container: "app", Recommended: builder.List("", "300Mi"), RecommendedLimit: builder.List("", "556Mi")}},
			want:     []string{"app requests=memory:556Mi limits=memory:556Mi"},
		},
		"RequestsOnly keeps the limits": {
			template: template(app),
			policy: policy(v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", ControlledValues: &requestsOnly}}}}),
			rows: []Row{rec("app", "200m", "300Mi")},
			want: []string{"app requests=cpu:200m,memory:300Mi limits="},
		},
		"without a policy: the defaults, and a value that does not move is left out": {
			template: template(app),
			rows:     []Row{rec("app", "200m", "256Mi")},
			want:     []string{"app requests=cpu:200m limits=cpu:400m"},
		},
		"no limit is added": {
			template: template(builder.Container("app").Requests("500m", "256Mi")),
			rows:     []Row{rec("app", "200m", "128Mi")},
			want:     []string{"app requests=cpu:200m,memory:128Mi limits="},
		},
		"a sidecar is an init container; a plain init container is not sized": {
			template: func() *corev1.PodTemplateSpec {
				tpl := template(app)
				side := builder.Container("proxy").Requests("100m", "64Mi").Obj()
				side.RestartPolicy = &always
				tpl.Spec.InitContainers = []corev1.Container{*builder.Container("setup").Requests("2", "1Gi").Obj(), *side}
				return tpl
			}(),
			rows: []Row{rec("proxy", "50m", "64Mi"), rec("app", "200m", "300Mi")},
			want: []string{"app requests=cpu:200m,memory:300Mi limits=cpu:400m,memory:600Mi", "proxy init requests=cpu:50m limits="},
		},
		"a maxAllowed bound": {
			template: template(app),
			policy: policy(v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "app", MinAllowed: builder.List("300m", "")}}}}),
			rows: []Row{rec("app", "200m", "")},
			want: []string{"app requests=cpu:300m limits=cpu:600m"},
		},
		"the QoS class stays: RequestsOnly stops just below the limits": {
			template: template(app),
			policy: policy(v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", ControlledValues: &requestsOnly}}}}),
			rows: []Row{rec("app", "3", "1Gi")},
			want: []string{"app requests=cpu:999m,memory:511Mi limits="},
		},
		"only limits: requests default to them and both move, Guaranteed": {
			template: template(builder.Container("app").Limits("1", "512Mi")),
			rows:     []Row{rec("app", "200m", "300Mi")},
			want:     []string{"app requests=cpu:200m,memory:300Mi limits=cpu:200m,memory:300Mi"},
		},
		"a LimitRange's default limit the manifest leaves out is written once it moves": {
			template: template(builder.Container("app").Requests("500m", "256Mi")),
			rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
				{Type: corev1.LimitTypeContainer, Default: builder.List("", "512Mi")}}}}}},
			rows: []Row{rec("app", "", "128Mi")},
			want: []string{"app requests=memory:128Mi limits=memory:256Mi"},
		},
		"an HPA's utilization target keeps its request; the limit moves": {
			template: template(app),
			hpas: []autoscalingv2.HorizontalPodAutoscaler{{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}}}}},
			rows: []Row{rec("app", "200m", "")},
			want: []string{"app requests= limits=cpu:500m"},
		},
		"nothing recommended": {
			template: template(app),
			rows:     []Row{{Container: "app", Reason: "no policy and no usage history"}},
			wantHeld: "no recommendation: app: no policy and no usage history",
		},
		"pod-level resources": {
			template: func() *corev1.PodTemplateSpec {
				tpl := template(app)
				tpl.Spec.Resources = &corev1.ResourceRequirements{Requests: builder.List("1", "")}
				return tpl
			}(),
			rows:     []Row{rec("app", "200m", "")},
			wantHeld: "the template has pod-level resources: new pods start at its size and are resized in place once running",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &Workload{Namespace: "shop", Kind: "Deployment", Name: "web", Policy: tc.policy, Pods: []*corev1.Pod{{}, {}}}
			got, err := PlanTemplate(TemplateInput{Workload: w, Rows: tc.rows, Ref: manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
				Template: tc.template, Rules: tc.rules, HPAs: tc.hpas, Server: resize.Version{Major: 1, Minor: 37}, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, containersText(got.Containers)); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if got.Held != tc.wantHeld {
				t.Errorf("held %q, want %q", got.Held, tc.wantHeld)
			}
			if (len(got.Containers) > 0 && tc.hpas != nil) != (got.HPA != "") {
				t.Errorf("HPA note %q", got.HPA)
			}
			if (len(got.Containers) > 0) != (got.Summary != "") {
				t.Errorf("summary %q for %d containers", got.Summary, len(got.Containers))
			}
		})
	}
	if _, err := PlanTemplate(TemplateInput{Workload: &Workload{}, Ref: manifest.Ref{Kind: "Deployment", Name: "web"}}); err == nil {
		t.Error("no template: want an error")
	}
}
