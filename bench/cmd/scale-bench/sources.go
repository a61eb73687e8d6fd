package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"
)

// metricsAPI is a stand-in for metrics-server: an HTTPS server that serves
// metrics.k8s.io/v1beta1 PodMetrics from the simulated usage (CPU as the
// mean over the kubelet's last housekeeping period, the working set as
// memory, stamped with that refresh), registered with the apiserver's
// aggregator through an APIService, a Service and an EndpointSlice, so the
// manager's metrics-server source reads it through the apiserver unchanged.
// Real metrics-server scrapes every kubelet each 15s and serves from
// memory; so does this, from the simulation's state, without the scrapes.
type metricsAPI struct {
	srv *http.Server
}

func (m *metricsAPI) stop() { _ = m.srv.Shutdown(context.Background()) }

func startMetricsAPI(ctx context.Context, cl *cluster, f *fleet) (*metricsAPI, error) {
	byNS := map[string][]*simPod{}
	for _, n := range f.nodes {
		n.mu.Lock()
		for _, p := range n.pods {
			byNS[p.ns] = append(byNS[p.ns], p)
		}
		n.mu.Unlock()
	}
	cert, err := servingCert(f.ip, nil, nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.ip, "0"))
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	const gv = "/apis/metrics.k8s.io/v1beta1"
	mux.HandleFunc(gv, func(w http.ResponseWriter, _ *http.Request) {
		writeJSONTo(w, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "metrics.k8s.io/v1beta1",
			APIResources: []metav1.APIResource{
				{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}},
				{Name: "nodes", Namespaced: false, Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
			},
		})
	})
	mux.HandleFunc(gv+"/namespaces/{ns}/pods", func(w http.ResponseWriter, r *http.Request) {
		list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}}
		for _, p := range byNS[r.PathValue("ns")] {
			t := f.refreshed(f.nodeOf(p))
			cpu := min(p.cpuAt(t.Add(-housekeeping/2), benchStart), p.limit())
			s := p.at(t)
			list.Items = append(list.Items, metricsv1beta1.PodMetrics{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name},
				Timestamp:  metav1.NewTime(t), Window: metav1.Duration{Duration: housekeeping},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpu*1000), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(s.memory), resource.BinarySI),
				}}},
			})
		}
		writeJSONTo(w, list)
	})
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bench-metrics"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port))}}},
	}
	if err := cl.c.Create(ctx, svc); err != nil {
		return nil, fmt.Errorf("creating the metrics Service: %w", err)
	}
	eps := &corev1.Endpoints{ //nolint:staticcheck // the aggregator may still resolve through Endpoints
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bench-metrics"},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck
			Addresses: []corev1.EndpointAddress{{IP: f.ip}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port)}}, //nolint:staticcheck
		}},
	}
	if err := cl.c.Create(ctx, eps); err != nil {
		return nil, fmt.Errorf("creating the metrics Endpoints: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "bench-metrics-1", Labels: map[string]string{discoveryv1.LabelServiceName: "bench-metrics"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{f.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}},
	}
	if err := cl.c.Create(ctx, slice); err != nil {
		return nil, fmt.Errorf("creating the metrics EndpointSlice: %w", err)
	}
	apisvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"service": map[string]any{"namespace": "kube-system", "name": "bench-metrics", "port": int64(443)},
		},
	}}
	if err := cl.c.Create(ctx, apisvc); err != nil {
		return nil, fmt.Errorf("creating the metrics APIService: %w", err)
	}
	// Ready once the aggregator proxies to it.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cl.cs.CoreV1().RESTClient().Get().AbsPath(gv, "namespaces", "bench-000", "pods").DoRaw(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = srv.Close()
			return nil, fmt.Errorf("metrics.k8s.io not served through the apiserver after a minute: %w", err)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	return &metricsAPI{srv: srv}, nil
}

func writeJSONTo(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// nodeOf is the simulated node p runs on.
func (f *fleet) nodeOf(p *simPod) *simNode { return f.nodes[p.node] }

// promServer is a real Prometheus (the Debian package's, as hack/ installs
// it) scraping every simulated kubelet's /metrics/cadvisor directly every
// 10s, as a Prometheus with kubelet service discovery does, on a random
// port with its own storage.
type promServer struct {
	cmd *exec.Cmd
	url string
}

func (p *promServer) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func startPrometheus(ctx context.Context, f *fleet, work string) (*promServer, error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return nil, fmt.Errorf("the prometheus source needs a prometheus binary (Debian: apt-get install prometheus): %w", err)
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, n := range f.nodes {
		targets = append(targets, fmt.Sprintf("%q", net.JoinHostPort(f.ip, fmt.Sprint(n.port))))
	}
	conf := fmt.Sprintf(`global: {scrape_interval: 10s, scrape_timeout: 5s}
scrape_configs:
- job_name: kubelet-cadvisor
  scheme: https
  metrics_path: /metrics/cadvisor
  honor_labels: true
  tls_config: {insecure_skip_verify: true}
  static_configs:
  - targets: [%s]
`, strings.Join(targets, ", "))
	cfgPath := filepath.Join(work, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(work, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(work, "prometheus-data"),
		"--web.listen-address="+addr, "--storage.tsdb.retention.time=1h")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &promServer{cmd: cmd, url: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("prometheus not ready after a minute (log: %s)", logf.Name())
		}
		if err := sleep(ctx, time.Second); err != nil {
			p.stop()
			return nil, err
		}
	}
	// Two scrapes, so rates exist when the manager starts.
	if err := sleep(ctx, 20*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}
