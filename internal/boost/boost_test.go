package boost

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

func TestStarting(t *testing.T) {
	boost := &v1alpha1.StartupBoost{FactorPercent: ptr(int32(200)), Duration: &metav1.Duration{Duration: 30 * time.Second}}
	gated := &v1alpha1.StartupBoost{FactorPercent: ptr(int32(200)), Duration: &metav1.Duration{Duration: 0}, Condition: "example.com/warm"}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	pod := func(started time.Duration, conds ...corev1.PodCondition) *corev1.Pod {
		p := builder.Pod("p").Container(builder.Container("app")).Obj()
		s := at(started)
		p.Status.StartTime = &s
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: s}}}}
		p.Status.Conditions = conds
		return p
	}
	ready := func(since time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(since)}
	}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(-5 * time.Second)}
	cases := map[string]struct {
		pod      *corev1.Pod
		boost    *v1alpha1.StartupBoost
		want     bool
		wantEnds time.Time
	}{
		"no boost":                                 {pod: pod(-time.Second), want: false},
		"not Ready yet":                            {pod: pod(-5*time.Second, notReady), boost: boost, want: true, wantEnds: now.Add(-5*time.Second + MaxDuration)},
		"Ready 10s ago, for 30s":                   {pod: pod(-time.Minute, ready(-10*time.Second)), boost: boost, want: true, wantEnds: now.Add(20 * time.Second)},
		"Ready 40s ago: started":                   {pod: pod(-time.Minute, ready(-40*time.Second)), boost: boost, want: false, wantEnds: now.Add(-10 * time.Second)},
		"restarted since it was Ready: boosted":    {pod: pod(-2*time.Second, ready(-40*time.Second)), boost: boost, want: true, wantEnds: now.Add(-2*time.Second + MaxDuration)},
		"never Ready within MaxDuration: given up": {pod: pod(-MaxDuration-time.Second, notReady), boost: boost, want: false},
		"the condition, not Ready, ends it":        {pod: pod(-time.Minute, ready(-40*time.Second)), boost: gated, want: true, wantEnds: now.Add(-time.Minute + MaxDuration)},
		"the condition True: started":              {pod: pod(-time.Minute, corev1.PodCondition{Type: "example.com/warm", Status: corev1.ConditionTrue, LastTransitionTime: at(-time.Second)}), boost: gated, want: false, wantEnds: now.Add(-time.Second)},
		"a pod whose containers have not started":  {pod: builder.Pod("p").Container(builder.Container("app")).Obj(), boost: boost, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ends := Starting(tc.pod, tc.boost, now)
			if got != tc.want || !ends.Equal(tc.wantEnds) {
				t.Errorf("Starting = %v until %v, want %v until %v", got, ends, tc.want, tc.wantEnds)
			}
		})
	}
}

func TestBoostedCPU(t *testing.T) {
	cases := map[string]struct {
		base  string
		boost v1alpha1.StartupBoost
		want  string
	}{
		"factor":                      {base: "100m", boost: v1alpha1.StartupBoost{FactorPercent: ptr(int32(400))}, want: "400m"},
		"factor rounds up":            {base: "33m", boost: v1alpha1.StartupBoost{FactorPercent: ptr(int32(150))}, want: "50m"},
		"amount above the base":       {base: "100m", boost: v1alpha1.StartupBoost{CPU: q("1")}, want: "1"},
		"amount below the base keeps": {base: "2", boost: v1alpha1.StartupBoost{CPU: q("1")}, want: "2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CPU(resource.MustParse(tc.base), &tc.boost); got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("CPU(%s) = %s, want %s", tc.base, got.String(), tc.want)
			}
		})
	}
}

func TestBoostTextRoundTrip(t *testing.T) {
	in := map[string]resource.Quantity{"proxy": resource.MustParse("200m"), "app": resource.MustParse("1500m")}
	text := Text(in)
	if text != "app=1500m,proxy=200m" {
		t.Fatalf("Text = %q", text)
	}
	out, err := ParseText(text)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range out {
		got[k] = v.String()
	}
	if diff := cmp.Diff(map[string]string{"app": "1500m", "proxy": "200m"}, got); diff != "" {
		t.Errorf("round trip (-want,+got):\n%s", diff)
	}
	for _, bad := range []string{"app", "=1", "app=lots", "app=1,"} {
		if _, err := ParseText(bad); err == nil {
			t.Errorf("ParseText(%q) took it", bad)
		}
	}
}
