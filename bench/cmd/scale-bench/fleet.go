package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// housekeeping is how often a simulated kubelet refreshes its containers'
// stats (cAdvisor's default housekeeping interval): a page read in between
// serves the samples of the last refresh, stamped with its time.
const housekeeping = 10 * time.Second

// fleet is every simulated node's kubelet: one HTTPS listener per node on
// the host's address (the apiserver refuses to proxy to loopback), serving
// /metrics/resource and /metrics/cadvisor from the simulated usage of the
// pods bound to it, with a serving certificate for that address signed by a
// CA of the benchmark's own (caFile), as a bootstrapped kubelet's is signed
// by the cluster CA. tailor's kubelet source reaches it as it reaches a real
// kubelet, through the Node's status.addresses and daemonEndpoints: directly
// (verifying it against caFile, --kubelet-ca-file), or through the
// apiserver's node proxy.
type fleet struct {
	start time.Time
	ip    string
	// caFile holds the CA that signed the listeners' certificate.
	caFile   string
	nodes    []*simNode
	servers  []*http.Server
	resource atomic.Int64 // /metrics/resource pages served
	cadvisor atomic.Int64 // /metrics/cadvisor pages served
}

type simNode struct {
	name  string
	port  int
	phase time.Duration // when in each housekeeping period this node refreshes
	mu    sync.Mutex
	pods  []*simPod
}

// simPod is one pod's simulated container "app": usage follows a trace
// shape scaled to the pod's initial limits, one trace sample per segment.
type simPod struct {
	ns, name string
	node     int // index in the fleet
	shape    *shape
	offset   int // where in the trace the pod starts
	cpuBase  float64
	memBase  float64

	mu        sync.Mutex
	cpuLimit  float64 // cores, as the kubelet last applied
	stepAt    time.Time
	stepCores float64
	// the counters, integrated up to upTo
	upTo                      time.Time
	cpuSeconds                float64
	periods, throttledPeriods float64
	throttledSeconds          float64
}

// newFleet starts the listeners, and writes their CA into dir.
func newFleet(ip string, nodes int, start time.Time, dir string) (*fleet, error) {
	caFile := filepath.Join(dir, "kubelet-ca.crt")
	cert, err := signedByNewCA(ip, caFile)
	if err != nil {
		return nil, err
	}
	f := &fleet{start: start, ip: ip, caFile: caFile}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	for i := range nodes {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			f.stop()
			return nil, fmt.Errorf("listening for simulated kubelet %d on %s: %w", i, ip, err)
		}
		n := &simNode{
			name:  fmt.Sprintf("node-%04d", i),
			port:  ln.Addr().(*net.TCPAddr).Port,
			phase: time.Duration(i) * housekeeping / time.Duration(nodes),
		}
		f.nodes = append(f.nodes, n)
		srv := &http.Server{Handler: f.handler(n), TLSConfig: tlsConf, ReadHeaderTimeout: 10 * time.Second}
		f.servers = append(f.servers, srv)
		go func() { _ = srv.ServeTLS(ln, "", "") }()
	}
	return f, nil
}

func (f *fleet) stop() {
	for _, s := range f.servers {
		_ = s.Shutdown(context.Background())
	}
}

func (f *fleet) handler(n *simNode) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics/resource", func(w http.ResponseWriter, _ *http.Request) {
		f.resource.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(n.page(f.refreshed(n), false))
	})
	mux.HandleFunc("/metrics/cadvisor", func(w http.ResponseWriter, _ *http.Request) {
		f.cadvisor.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(n.page(f.refreshed(n), true))
	})
	return mux
}

// refreshed is when node n last refreshed its stats.
func (f *fleet) refreshed(n *simNode) time.Time {
	since := time.Since(f.start) - n.phase
	if since < 0 {
		return f.start
	}
	return f.start.Add(n.phase + since.Truncate(housekeeping))
}

// page renders a node's metrics page at stats time t: the resource page's
// two series, or a cAdvisor page with the series tailor reads and some of
// the others a real one carries (a real cAdvisor page has about 50 series
// per container; this has 12).
func (n *simNode) page(t time.Time, cadvisor bool) []byte {
	n.mu.Lock()
	pods := append([]*simPod(nil), n.pods...)
	n.mu.Unlock()
	ms := strconv.FormatInt(t.UnixMilli(), 10)
	b := make([]byte, 0, 256+len(pods)*(200+boolInt(cadvisor)*2400))
	var help []string
	if cadvisor {
		help = []string{"container_cpu_usage_seconds_total", "container_cpu_cfs_periods_total", "container_cpu_cfs_throttled_periods_total",
			"container_cpu_cfs_throttled_seconds_total", "container_memory_working_set_bytes", "container_memory_usage_bytes",
			"container_memory_rss", "container_memory_cache", "container_spec_cpu_quota", "container_spec_cpu_period",
			"container_spec_memory_limit_bytes", "container_last_seen"}
	} else {
		help = []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes"}
	}
	values := make(map[string][]float64, len(help))
	for _, p := range pods {
		s := p.at(t)
		for _, h := range help {
			var v float64
			switch h {
			case "container_cpu_usage_seconds_total":
				v = s.cpuSeconds
			case "container_memory_working_set_bytes":
				v = s.memory
			case "container_memory_usage_bytes":
				v = s.memory * 1.2
			case "container_memory_rss":
				v = s.memory * 0.9
			case "container_memory_cache":
				v = s.memory * 0.3
			case "container_cpu_cfs_periods_total":
				v = s.periods
			case "container_cpu_cfs_throttled_periods_total":
				v = s.throttledPeriods
			case "container_cpu_cfs_throttled_seconds_total":
				v = s.throttledSeconds
			case "container_spec_cpu_quota":
				v = s.cpuLimit * 100000
			case "container_spec_cpu_period":
				v = 100000
			case "container_spec_memory_limit_bytes":
				v = 2 * p.memBase
			case "container_last_seen":
				v = float64(t.Unix())
			}
			values[h] = append(values[h], v)
		}
	}
	for _, h := range help {
		kind := "gauge"
		if len(h) > 6 && h[len(h)-6:] == "_total" {
			kind = "counter"
		}
		b = append(b, "# TYPE "...)
		b = append(b, h...)
		b = append(b, ' ')
		b = append(b, kind...)
		b = append(b, '\n')
		for i, p := range pods {
			b = append(b, h...)
			b = append(b, `{container="app",`...)
			if cadvisor {
				b = append(b, `id="/kubepods/burstable/pod`...)
				b = append(b, p.name...)
				b = append(b, `/app",image="registry.k8s.io/pause:3.10",name="app",`...)
			}
			b = append(b, `namespace="`...)
			b = append(b, p.ns...)
			b = append(b, `",pod="`...)
			b = append(b, p.name...)
			b = append(b, `"} `...)
			b = strconv.AppendFloat(b, values[h][i], 'g', -1, 64)
			b = append(b, ' ')
			b = append(b, ms...)
			b = append(b, '\n')
		}
	}
	return b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// podSample is a container's counters and gauges at one stats time.
type podSample struct {
	cpuSeconds, periods, throttledPeriods, throttledSeconds float64
	memory, cpuLimit                                        float64
}

// segment is how long one trace sample (5 minutes in Bitbrains) lasts in
// the benchmark: the traces play 10 times faster than they were recorded
// (a day's shape in 2.4 hours), so usage moves within a run without
// turning every sync into a resize storm.
const segment = 30 * time.Second

// usage is the pod's CPU usage in cores at t (before throttling).
func (p *simPod) cpuAt(t time.Time, start time.Time) float64 {
	if !p.stepAt.IsZero() && !t.Before(p.stepAt) {
		return p.stepCores
	}
	i := int(t.Sub(start) / segment)
	return p.cpuBase * p.shape.cpu[(p.offset+i)%len(p.shape.cpu)]
}

// at integrates the pod's counters up to t (t only moves forward: an older
// t returns the newest state, as a kubelet does not go back).
func (p *simPod) at(t time.Time) podSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := benchStart
	for p.upTo.Before(t) {
		next := start.Add((p.upTo.Sub(start)/segment + 1) * segment)
		if !p.stepAt.IsZero() && p.stepAt.After(p.upTo) && p.stepAt.Before(next) {
			next = p.stepAt
		}
		if next.After(t) {
			next = t
		}
		dt := next.Sub(p.upTo).Seconds()
		want := p.cpuAt(p.upTo, start)
		used, share := want, 0.0
		if p.cpuLimit > 0 {
			// CFS: at most the limit, and the share of periods throttled
			// rises as demand nears the quota (bursts within a period hit
			// it before the mean does).
			used = math.Min(want, p.cpuLimit)
			share = math.Max(0, math.Min(1, (want/p.cpuLimit-0.8)/0.2))
		}
		p.cpuSeconds += used * dt
		p.periods += 10 * dt
		p.throttledPeriods += 10 * dt * share
		p.throttledSeconds += 0.1 * dt * share * 10 * 0.02
		p.upTo = next
	}
	i := int(t.Sub(start) / segment)
	mem := p.memBase * p.shape.mem[(p.offset+i)%len(p.shape.mem)]
	return podSample{cpuSeconds: p.cpuSeconds, periods: p.periods, throttledPeriods: p.throttledPeriods,
		throttledSeconds: p.throttledSeconds, memory: mem, cpuLimit: p.cpuLimit}
}

// step makes the pod use cores from t on.
func (p *simPod) step(t time.Time, cores float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stepAt, p.stepCores = t, cores
}

func (p *simPod) setLimit(cores float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cpuLimit = cores
}

func (p *simPod) limit() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cpuLimit
}

// benchStart is when usage time starts for every pod.
var benchStart = time.Now().Truncate(time.Second)

// signedByNewCA makes a CA, writes its certificate to caFile, and returns
// a serving certificate for ip that it signed.
func signedByNewCA(ip, caFile string) (tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "scale-bench-kubelet-ca"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IsCA:         true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	return servingCert(ip, ca, caKey)
}

// servingCert is a serving certificate for ip signed by ca with caKey, or
// by itself when ca is nil.
func servingCert(ip string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "simulated-kubelet"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP(ip)},
	}
	parent, signer := ca, caKey
	if ca == nil {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// hostIP is the first non-loopback IPv4 address of the host.
func hostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address: the apiserver does not proxy to loopback; give one with --node-ip")
}
