package manager

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tailorhq/tailor/test/builder"
)

// The kubelet source reads each kubelet on its own port unless told to go
// through the apiserver's node proxy: with the defaults, the apiserver
// serves none of its reads.
func TestKubeletSourceReadsDirectlyByDefault(t *testing.T) {
	const page = "# TYPE container_cpu_usage_seconds_total counter\ncontainer_cpu_usage_seconds_total{container=\"app\",namespace=\"ns\",pod=\"web\"} 1 1795836458917\n"
	var direct, proxied atomic.Int64
	kubeletSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" || r.Header.Get("Authorization") != "Bearer manager-token" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		direct.Add(1)
		_, _ = w.Write([]byte(page))
	}))
	defer kubeletSrv.Close()
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes/n1/proxy/metrics/resource" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		proxied.Add(1)
		_, _ = w.Write([]byte(page))
	}))
	defer apiserver.Close()
	caFile := filepath.Join(t.TempDir(), "kubelet-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kubeletSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(kubeletSrv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	node := builder.Node("n1").Address(corev1.NodeInternalIP, "127.0.0.1").KubeletPort(int32(p)).Obj()
	nodes := func(context.Context, string) (*corev1.Node, error) { return node.DeepCopy(), nil }
	pod := builder.Pod("web").Namespace("ns").Node("n1").Container(builder.Container("app")).Running().Obj()

	cases := map[string]struct {
		o                       Options
		wantDirect, wantProxied int64
	}{
		"default: directly, verified against the CA file": {o: Options{MetricsSource: "kubelet", KubeletCAFile: caFile}, wantDirect: 1},
		"insecure opt-out: directly, unverified":          {o: Options{MetricsSource: "kubelet", KubeletInsecureTLS: true}, wantDirect: 1},
		"through the apiserver proxy when asked":          {o: Options{MetricsSource: "kubelet", KubeletViaAPIServerProxy: true}, wantProxied: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before, beforeProxied := direct.Load(), proxied.Load()
			src, err := NewSource(&rest.Config{Host: apiserver.URL, BearerToken: "manager-token"}, nodes, tc.o)
			if err != nil {
				t.Fatalf("NewSource: %v", err)
			}
			if _, err := src.Usage(context.Background(), []*corev1.Pod{pod}); err != nil {
				t.Fatalf("Usage: %v", err)
			}
			got := [2]int64{direct.Load() - before, proxied.Load() - beforeProxied}
			if diff := cmp.Diff([2]int64{tc.wantDirect, tc.wantProxied}, got); diff != "" {
				t.Errorf("pages read [directly, through the proxy] (-want,+got):\n%s", diff)
			}
		})
	}
}
