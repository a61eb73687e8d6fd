package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func TestRecreatable(t *testing.T) {
	cases := map[string]struct {
		pod     *corev1.Pod
		wantErr string
	}{
		"replicaset":  {pod: builder.Pod("p").Owner("ReplicaSet", "web-1", "rs").Obj()},
		"statefulset": {pod: builder.Pod("p").Owner("StatefulSet", "db", "ss").Obj()},
		"bare pod":    {pod: builder.Pod("p").Obj(), wantErr: "no controller"},
		"daemonset":   {pod: builder.Pod("p").Owner("DaemonSet", "agent", "ds").Obj(), wantErr: "same node"},
		"job":         {pod: builder.Pod("p").Owner("Job", "batch", "j").Obj(), wantErr: "only recreates"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ref, err := Recreatable(tc.pod)
			if tc.wantErr == "" {
				if err != nil || ref == nil {
					t.Fatalf("Recreatable = %v, %v; want the owner", ref, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Recreatable error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRecreatedContainers(t *testing.T) {
	// The pod as resized in place since its template made it at 250m/500m.
	pod := builder.Pod("p").Container(builder.Container("app").Requests("400m", "128Mi").Limits("800m", "256Mi")).
		Container(builder.Container("side").Requests("100m", "64Mi")).Obj()
	desired := resize.Desired{Containers: map[string]corev1.ResourceRequirements{
		"app": builder.Requirements(builder.List("1", ""), builder.List("2", "")),
	}}
	templateOf := func(cs ...*builder.ContainerWrapper) *corev1.PodTemplateSpec {
		p := builder.Pod("t")
		for _, c := range cs {
			p.Container(c)
		}
		return &corev1.PodTemplateSpec{Spec: p.Obj().Spec}
	}
	cases := map[string]struct {
		pod      *corev1.Pod
		template *corev1.PodTemplateSpec
		want     []v1alpha1.RecreatedContainer
		wantErr  string
	}{
		"the entry names the template's values, not the resized pod's": {
			template: templateOf(burstable(), builder.Container("side").Requests("100m", "64Mi")),
			want: []v1alpha1.RecreatedContainer{{
				Name:             "app",
				TemplateRequests: builder.List("250m", "128Mi"), TemplateLimits: builder.List("500m", "256Mi"),
				Requests: builder.List("1", "128Mi"), Limits: builder.List("2", "256Mi"),
			}},
		},
		"a container resized in place keeps its size: its template's would undo the resize": {
			pod: builder.Pod("p").Container(builder.Container("app").Requests("400m", "128Mi").Limits("800m", "256Mi")).
				Container(builder.Container("side").Requests("100m", "512Mi").Limit(corev1.ResourceMemory, "1Gi")).Obj(),
			template: templateOf(burstable(), builder.Container("side").Requests("100m", "64Mi").Limit(corev1.ResourceMemory, "128Mi")),
			want: []v1alpha1.RecreatedContainer{{
				Name:             "app",
				TemplateRequests: builder.List("250m", "128Mi"), TemplateLimits: builder.List("500m", "256Mi"),
				Requests: builder.List("1", "128Mi"), Limits: builder.List("2", "256Mi"),
			}, {
				Name:             "side",
				TemplateRequests: builder.List("100m", "64Mi"), TemplateLimits: builder.List("", "128Mi"),
				Requests: builder.List("100m", "512Mi"), Limits: builder.List("", "1Gi"),
			}},
		},
		"a container the template lacks: the pod was not created from it": {
			template: templateOf(burstable()),
			wantErr:  "container side is not in the owner's pod template",
		},
		"no template: nothing to tie the entry to": {
			wantErr: "not known",
		},
		"a template without the container": {
			template: templateOf(builder.Container("side").Requests("100m", "64Mi")),
			wantErr:  "container app is not in the owner's pod template",
		},
		"a template that added a cpu limit the pod lacks: the entry would put the request above it": {
			pod:      builder.Pod("p").Container(builder.Container("app").Requests("400m", "128Mi").Limit(corev1.ResourceMemory, "256Mi")).Obj(),
			template: templateOf(builder.Container("app").Requests("250m", "128Mi").Limits("300m", "256Mi")),
			wantErr:  "sets other cpu requests or limits than the owner's pod template",
		},
		"a template that dropped a limit the pod has": {
			template: templateOf(builder.Container("app").Requests("250m", "128Mi").Limit(corev1.ResourceMemory, "256Mi")),
			wantErr:  "sets other cpu requests or limits than the owner's pod template",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pod
			if tc.pod != nil {
				p = tc.pod
			}
			got, err := RecreatedContainers(p, tc.template, desired)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RecreatedContainers error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RecreatedContainers (-want,+got):\n%s", diff)
			}
		})
	}
}
