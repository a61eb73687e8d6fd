package resize

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/test/builder"
)

// gatedServer is discovery as an apiserver of version minor answers it,
// with its /metrics naming the resize preemption gate in state gate ("" does
// not name it; "forbidden" refuses /metrics).
type gatedServer struct {
	*fakediscovery.FakeDiscovery
	rc rest.Interface
}

func (g gatedServer) RESTClient() rest.Interface { return g.rc }

func newGatedServer(t *testing.T, minor, gate string) gatedServer {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/metrics":
			http.NotFound(w, r)
		case gate == "forbidden":
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
		case gate == "":
			_, _ = w.Write([]byte("kubernetes_feature_enabled{name=\"InPlacePodVerticalScaling\",stage=\"\"} 1\n"))
		default:
			_, _ = w.Write([]byte("# TYPE kubernetes_feature_enabled gauge\nkubernetes_feature_enabled{name=\"InPlacePodVerticalScalingSchedulerPreemption\",stage=\"ALPHA\"} " + gate + "\n"))
		}
	}))
	t.Cleanup(srv.Close)
	rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	d := resizeServer()
	d.FakedServerVersion = &version.Info{Major: "1", Minor: minor, GitVersion: "v1." + minor + ".1"}
	return gatedServer{FakeDiscovery: d, rc: rc}
}

// A resize the kubelet would defer on a full node: where the scheduler
// preempts for resizes, tailor names the pods it would evict and does not
// send the resize without --allow-preemption; where it does not, or tailor
// cannot tell, it says so.
func TestResizePredictsSchedulerPreemption(t *testing.T) {
	onNode := func(name string, prio int32, cpu string) client.Object {
		return builder.Pod(name).Namespace("default").UID(name).Node("n1").Priority(prio).ResourceVersion("7").
			Container(builder.Container("app").Requests(cpu, "256Mi").ResizePolicy(corev1.ResourceCPU, corev1.NotRequired)).
			QOS(corev1.PodQOSBurstable).Running().Obj()
	}
	// web asks 3 of the node's 4 cores beside 1.5 requested.
	objs := []client.Object{
		builder.Node("n1").Allocatable("4", "16Gi").Obj(),
		onNode("web", 1000, "2"), onNode("high", 2000, "500m"), onNode("low", 0, "1"),
	}
	cases := map[string]struct {
		minor, gate string
		dryRun      string
		allow       bool
		wantCode    int
		wantOut     []string
		sent        bool
	}{
		"on: the victim named, the resize not sent": {
			minor: "37", gate: "1", dryRun: "none", wantCode: exit.Refused,
			wantOut: []string{"scheduler preemption for resizes: on", "would preempt 1 pod(s) of lower priority on node n1 to make the room: default/low (priority 0)"},
		},
		"on, allowed: sent": {
			minor: "37", gate: "1", dryRun: "none", allow: true, wantCode: exit.OK, sent: true,
			wantOut: []string{"default/low (priority 0)"},
		},
		"on, predicted only": {
			minor: "37", gate: "1", dryRun: "client", wantCode: exit.OK,
			wantOut: []string{"default/low (priority 0)"},
		},
		"off: nobody preempted": {
			minor: "37", gate: "0", dryRun: "client", wantCode: exit.OK,
			wantOut: []string{"scheduler preemption for resizes: off (the apiserver reports feature gate InPlacePodVerticalScalingSchedulerPreemption off): nobody is preempted"},
		},
		"unknown: said, and what it would do": {
			minor: "37", gate: "forbidden", dryRun: "client", wantCode: exit.OK,
			wantOut: []string{"scheduler preemption for resizes: unknown (cannot read the apiserver's /metrics", "if feature gate InPlacePodVerticalScalingSchedulerPreemption is on: the scheduler would preempt 1 pod(s)"},
		},
		"before 1.37: off": {
			minor: "36", gate: "", dryRun: "client", wantCode: exit.OK,
			wantOut: []string{"off (Kubernetes 1.36 has no scheduler preemption for resizes"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).
				WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
			var out bytes.Buffer
			o := &ResizeOptions{Requests: "cpu=3", DryRun: tc.dryRun, AllowPreemption: tc.allow, Timeout: time.Second, now: time.Now,
				clients: &kube.Clients{Client: c, Discovery: newGatedServer(t, tc.minor, tc.gate), Namespace: "default"}}
			code := runResize(t, o, &out, "web")
			// --wait follows a resize the fake kubelet never applies.
			if tc.sent && code == exit.Incomplete {
				code = exit.OK
			}
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d:\n%s", code, tc.wantCode, out.String())
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			var web corev1.Pod
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, &web); err != nil {
				t.Fatal(err)
			}
			if sent := web.Spec.Containers[0].Resources.Requests.Cpu().String() == "3"; sent != tc.sent {
				t.Errorf("resize sent %v, want %v", sent, tc.sent)
			}
		})
	}
}
