package resize

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/test/builder"
)

// TestResizeDryRunClientUnderNamespaceRules: `tailor resize --dry-run=client`
// reads the namespace's LimitRanges and ResourceQuotas and refuses what the
// apiserver refuses, naming the rule in the apiserver's words. The cases are
// Kubernetes' own in-place resize e2e tests for quota and LimitRange
// (test/e2e/node/pod_resize.go), which tailor once predicted Accepted.
func TestResizeDryRunClientUnderNamespaceRules(t *testing.T) {
	pod := func(name string) client.Object {
		return builder.Pod(name).ResourceVersion("7").
			Container(builder.Container("c1").Requests("300m", "300Mi").Limits("300m", "300Mi")).
			QOS(corev1.PodQOSGuaranteed).Obj()
	}
	// Two pods of 300m/300Mi charged to it.
	quota := builder.Quota("resize-resource-quota", builder.List("800m", "800Mi"), builder.List("600m", "600Mi"))
	limits := builder.LimitRange("resize-limit-ranger", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer,
		Max:  builder.List("500m", "500Mi"), Min: builder.List("50m", "50Mi"),
		Default: builder.List("100m", "100Mi"), DefaultRequest: builder.List("50m", "50Mi"),
	})
	cases := map[string]struct {
		rules    []client.Object
		to       string // --requests and --limits both
		wantCode int
		wantOut  string
	}{
		"quota: exceed cpu": {
			rules: []client.Object{&quota}, to: "cpu=600m,memory=400Mi", wantCode: exit.Refused,
			wantOut: "prediction: Refused by rule ResourceQuota: exceeded quota: resize-resource-quota, requested: cpu=300m, used: cpu=600m, limited: cpu=800m",
		},
		"quota: exceed memory": {
			rules: []client.Object{&quota}, to: "cpu=250m,memory=750Mi", wantCode: exit.Refused,
			wantOut: "exceeded quota: resize-resource-quota, requested: memory=450Mi, used: memory=600Mi, limited: memory=800Mi",
		},
		"quota: exceed cpu and memory": {
			rules: []client.Object{&quota}, to: "cpu=600m,memory=750Mi", wantCode: exit.Refused,
			wantOut: "exceeded quota: resize-resource-quota, requested: cpu=300m,memory=450Mi, used: cpu=600m,memory=600Mi, limited: cpu=800m,memory=800Mi",
		},
		"quota: valid increase of both": {
			rules: []client.Object{&quota}, to: "cpu=400m,memory=400Mi", wantCode: exit.OK, wantOut: "prediction: Accepted",
		},
		"LimitRange: exceed max cpu": {
			rules: []client.Object{&limits}, to: "cpu=600m,memory=250Mi", wantCode: exit.Refused,
			wantOut: "prediction: Refused by rule LimitRange: maximum cpu usage per Container is 500m, but limit is 600m (LimitRange/resize-limit-ranger, container c1)",
		},
		"LimitRange: exceed max memory": {
			rules: []client.Object{&limits}, to: "cpu=250m,memory=750Mi", wantCode: exit.Refused,
			wantOut: "maximum memory usage per Container is 500Mi, but limit is 750Mi",
		},
		"LimitRange: exceed max cpu and memory, both said": {
			rules: []client.Object{&limits}, to: "cpu=600m,memory=600Mi", wantCode: exit.Refused,
			wantOut: "also rule LimitRange: maximum memory usage per Container is 500Mi, but limit is 600Mi",
		},
		"LimitRange: request below min cpu": {
			rules: []client.Object{&limits}, to: "cpu=10m,memory=400Mi", wantCode: exit.Refused,
			wantOut: "minimum cpu usage per Container is 50m, but request is 10m",
		},
		"LimitRange: request below min memory": {
			rules: []client.Object{&limits}, to: "cpu=250m,memory=10Mi", wantCode: exit.Refused,
			wantOut: "minimum memory usage per Container is 50Mi, but request is 10Mi",
		},
		"LimitRange: below min cpu and memory": {
			rules: []client.Object{&limits}, to: "cpu=10m,memory=10Mi", wantCode: exit.Refused,
			wantOut: "also rule LimitRange: minimum memory usage per Container is 50Mi, but request is 10Mi",
		},
		"LimitRange: exactly the max": {
			rules: []client.Object{&limits}, to: "cpu=500m,memory=500Mi", wantCode: exit.OK, wantOut: "prediction: Accepted",
		},
		"LimitRange: valid increase of cpu": {
			rules: []client.Object{&limits}, to: "cpu=350m,memory=300Mi", wantCode: exit.OK, wantOut: "prediction: Accepted",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := append([]client.Object{pod("testpod1"), pod("testpod2")}, tc.rules...)
			var out bytes.Buffer
			o := &ResizeOptions{Requests: tc.to, Limits: tc.to, DryRun: "client", Timeout: time.Minute, now: time.Now,
				clients: &kube.Clients{Client: fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build(),
					Discovery: resizeServer(), Namespace: metav1.NamespaceDefault}}
			code := runResize(t, o, &out, "testpod1")
			if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s", code, tc.wantCode, tc.wantOut, out.String())
			}
		})
	}
}

// resizeServer is discovery as a 1.37 apiserver answers it.
func resizeServer() *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{
		Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
			GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods"}, {Name: "pods/resize"}},
		}}},
		FakedServerVersion: &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.1"},
	}
}

// runResize runs o on pod as the command does, its output to out, and
// returns the exit status it would end with.
func runResize(t *testing.T, o *ResizeOptions, out *bytes.Buffer, pod string) int {
	t.Helper()
	o.streams.Out, o.streams.ErrOut = out, out
	if err := o.Complete([]string{pod}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(t.Context()); err != nil {
		var ee *exit.CodeError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return exit.Error
	}
	return exit.OK
}
