package v1alpha1

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/test/builder"
)

func ptr[T any](v T) *T { return &v }

// quantityEqual compares quantities by value: 1 and 1000m are the same bound.
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func spec(policies ...ContainerPolicy) *TailorPolicySpec {
	return &TailorPolicySpec{ResourcePolicy: &ResourcePolicy{ContainerPolicies: policies}}
}

func defaults(name string) ContainerPolicy {
	return ContainerPolicy{
		ContainerName:       name,
		Mode:                ptr(ContainerModeAuto),
		ControlledResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		ControlledValues:    ptr(ControlledValuesRequestsAndLimits),
		AllowRestart:        ptr(false),
	}
}

func TestPolicyFor(t *testing.T) {
	cases := map[string]struct {
		spec      *TailorPolicySpec
		container string
		want      ContainerPolicy
		wantErr   string
	}{
		"no resourcePolicy: tailor's defaults": {
			spec:      &TailorPolicySpec{},
			container: "app",
			want:      defaults("app"),
		},
		"only another container's entry: defaults": {
			spec:      spec(ContainerPolicy{ContainerName: "sidecar", Mode: ptr(ContainerModeOff), MaxAllowed: builder.List("1", "")}),
			container: "app",
			want:      defaults("app"),
		},
		"only '*': every field from it": {
			spec: spec(ContainerPolicy{
				ContainerName:       "*",
				Mode:                ptr(ContainerModeOff),
				ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
				ControlledValues:    ptr(ControlledValuesRequestsOnly),
				AllowRestart:        ptr(true),
				MinAllowed:          builder.List("100m", "64Mi"),
				MaxAllowed:          builder.List("2", "4Gi"),
			}),
			container: "app",
			want: ContainerPolicy{
				ContainerName:       "app",
				Mode:                ptr(ContainerModeOff),
				ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
				ControlledValues:    ptr(ControlledValuesRequestsOnly),
				AllowRestart:        ptr(true),
				MinAllowed:          builder.List("100m", "64Mi"),
				MaxAllowed:          builder.List("2", "4Gi"),
			},
		},
		"named entry wins per field and per resource, the rest from '*'": {
			spec: spec(
				ContainerPolicy{
					ContainerName:    "*",
					ControlledValues: ptr(ControlledValuesRequestsOnly),
					MinAllowed:       builder.List("100m", "64Mi"),
					MaxAllowed:       builder.List("2", "4Gi"),
				},
				ContainerPolicy{
					ContainerName:       "app",
					ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
					AllowRestart:        ptr(true),
					MaxAllowed:          builder.List("", "8Gi"),
				},
			),
			container: "app",
			want: ContainerPolicy{
				ContainerName:       "app",
				Mode:                ptr(ContainerModeAuto),
				ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
				ControlledValues:    ptr(ControlledValuesRequestsOnly),
				AllowRestart:        ptr(true),
				MinAllowed:          builder.List("100m", "64Mi"),
				MaxAllowed:          builder.List("2", "8Gi"),
			},
		},
		"named entry without '*': unset fields take defaults": {
			spec:      spec(ContainerPolicy{ContainerName: "app", MinAllowed: builder.List("250m", "")}),
			container: "app",
			want: func() ContainerPolicy {
				p := defaults("app")
				p.MinAllowed = builder.List("250m", "")
				return p
			}(),
		},
		"recommender overrides merge per field": {
			spec: spec(
				ContainerPolicy{ContainerName: "*", Recommender: &RecommenderOverrides{
					CPUWindow:          &metav1.Duration{Duration: time.Hour},
					CPUHeadroomPercent: ptr(int32(10)),
				}},
				ContainerPolicy{ContainerName: "app", Recommender: &RecommenderOverrides{
					CPUWindow:             &metav1.Duration{Duration: 2 * time.Hour},
					MemoryHeadroomPercent: ptr(int32(20)),
				}},
			),
			container: "app",
			want: func() ContainerPolicy {
				p := defaults("app")
				p.Recommender = &RecommenderOverrides{
					CPUWindow:             &metav1.Duration{Duration: 2 * time.Hour},
					CPUHeadroomPercent:    ptr(int32(10)),
					MemoryHeadroomPercent: ptr(int32(20)),
				}
				return p
			}(),
		},
		"'*' minimum above the named maximum: an error naming both entries": {
			spec: spec(
				ContainerPolicy{ContainerName: "*", MinAllowed: builder.List("", "2Gi")},
				ContainerPolicy{ContainerName: "app", MaxAllowed: builder.List("", "1Gi")},
			),
			container: "app",
			wantErr:   `container "app": minAllowed.memory 2Gi (from containerName "*") exceeds maxAllowed.memory 1Gi (from containerName "app"); lower the one or raise the other`,
		},
		"named minimum above the '*' maximum: an error": {
			spec: spec(
				ContainerPolicy{ContainerName: "*", MaxAllowed: builder.List("1", "")},
				ContainerPolicy{ContainerName: "app", MinAllowed: builder.List("1500m", "")},
			),
			container: "app",
			wantErr:   `container "app": minAllowed.cpu 1500m (from containerName "app") exceeds maxAllowed.cpu 1 (from containerName "*"); lower the one or raise the other`,
		},
		"contradiction only in another container's merge: no error for this one": {
			spec: spec(
				ContainerPolicy{ContainerName: "*", MinAllowed: builder.List("", "2Gi")},
				ContainerPolicy{ContainerName: "sidecar", MaxAllowed: builder.List("", "1Gi")},
			),
			container: "app",
			want: func() ContainerPolicy {
				p := defaults("app")
				p.MinAllowed = builder.List("", "2Gi")
				return p
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.spec.PolicyFor(tc.container)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("PolicyFor(%q) error (-want,+got):\n%s", tc.container, diff)
			}
			if diff := cmp.Diff(tc.want, got, quantityEqual); diff != "" {
				t.Errorf("PolicyFor(%q) (-want,+got):\n%s", tc.container, diff)
			}
		})
	}
}

// The controller may change what PolicyFor returns (e.g. clamp a bound)
// without changing the policy it read from the cache.
func TestPolicyForSharesNothing(t *testing.T) {
	s := spec(ContainerPolicy{
		ContainerName:       "*",
		Mode:                ptr(ContainerModeAuto),
		ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		AllowRestart:        ptr(false),
		MinAllowed:          builder.List("100m", ""),
		Recommender:         &RecommenderOverrides{CPUHeadroomPercent: ptr(int32(10))},
	})
	before := s.DeepCopy()

	got, err := s.PolicyFor("app")
	if err != nil {
		t.Fatal(err)
	}
	*got.Mode = ContainerModeOff
	got.ControlledResources[0] = corev1.ResourceMemory
	*got.AllowRestart = true
	got.MinAllowed[corev1.ResourceCPU] = resource.MustParse("3")
	*got.Recommender.CPUHeadroomPercent = 99
	*got.ControlledValues = ControlledValuesRequestsOnly

	if diff := cmp.Diff(before, s, quantityEqual); diff != "" {
		t.Errorf("changing PolicyFor's result changed the spec (-before,+after):\n%s", diff)
	}
	dflt, err := (&TailorPolicySpec{}).PolicyFor("app")
	if err != nil {
		t.Fatal(err)
	}
	dflt.ControlledResources[0] = corev1.ResourceMemory
	*dflt.Mode = ContainerModeOff
	if DefaultContainerMode != ContainerModeAuto || DefaultControlledValues != ControlledValuesRequestsAndLimits || DefaultAllowRestart {
		t.Errorf("changing PolicyFor's result changed the package defaults")
	}
	if diff := cmp.Diff([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}, DefaultControlledResources); diff != "" {
		t.Errorf("DefaultControlledResources changed (-want,+got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		spec    *TailorPolicySpec
		wantErr string
	}{
		"minimal": {
			spec: &TailorPolicySpec{TargetRef: &TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		},
		"consistent bounds across entries": {
			spec: spec(
				ContainerPolicy{ContainerName: "*", MinAllowed: builder.List("100m", "64Mi"), MaxAllowed: builder.List("2", "")},
				ContainerPolicy{ContainerName: "app", MaxAllowed: builder.List("", "1Gi")},
			),
		},
		"each contradicting entry is reported": {
			spec: spec(
				ContainerPolicy{ContainerName: "app", MaxAllowed: builder.List("", "1Gi")},
				ContainerPolicy{ContainerName: "*", MinAllowed: builder.List("1", "2Gi")},
				ContainerPolicy{ContainerName: "worker", MaxAllowed: builder.List("500m", "")},
			),
			wantErr: `container "app": minAllowed.memory 2Gi (from containerName "*") exceeds maxAllowed.memory 1Gi (from containerName "app"); lower the one or raise the other` + "\n" +
				`container "worker": minAllowed.cpu 1 (from containerName "*") exceeds maxAllowed.cpu 500m (from containerName "worker"); lower the one or raise the other`,
		},
		"a query guardrail's threshold that is no number, and one with both bounds": {
			spec: &TailorPolicySpec{Behavior: &Behavior{ScaleDown: &ScaleDownRules{Canary: &Canary{Guardrails: &CanaryGuardrails{Queries: []CanaryQuery{
				{Name: "latency", Query: "up", Threshold: ptr("high")},
				{Name: "errors", Query: "up", Threshold: ptr("0.1"), SiblingsPercent: ptr[int32](20)},
				{Name: "fine", Query: "up", Threshold: ptr("1e-3")},
			}}}}}},
			wantErr: `canary guardrail query latency: threshold "high" is not a number; write one such as 0.5 or 1e-3` + "\n" +
				`canary guardrail query errors: give exactly one of threshold and siblingsPercent`,
		},
		// Stored before the CRD held new specs to the bounds: the manager
		// asks none of its queries.
		"five query guardrails, one of them too long": {
			spec: &TailorPolicySpec{Behavior: &Behavior{ScaleDown: &ScaleDownRules{Canary: &Canary{Guardrails: &CanaryGuardrails{Queries: []CanaryQuery{
				{Name: "a", Query: "up", Threshold: ptr("1")},
				{Name: "b", Query: "up", Threshold: ptr("1")},
				{Name: "c", Query: "up", Threshold: ptr("1")},
				{Name: "d", Query: "up", Threshold: ptr("1")},
				{Name: "long", Query: strings.Repeat("x", MaxQueryLength+1), Threshold: ptr("1")},
			}}}}}},
			wantErr: `canary guardrail queries: 5, at most 4 are asked; take some out, or aggregate them into one` + "\n" +
				`canary guardrail query long: 1025 bytes, at most 1024; shorten it`,
		},
		"a usage query too long": {
			spec:    &TailorPolicySpec{Metrics: &MetricsOverrides{Prometheus: &PrometheusQueries{CPU: "up", Memory: strings.Repeat("x", 4096)}}},
			wantErr: `metrics.prometheus.memory: 4096 bytes, at most 1024; shorten it`,
		},
		"malformed label value in the selector": {
			spec:    &TailorPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web server"}}},
			wantErr: `selector: values[0][app]: Invalid value: "web server": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotErr := ""
			if err := tc.spec.Validate(); err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("Validate() (-want,+got):\n%s", diff)
			}
		})
	}
}
