package kubelet_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/test/builder"
)

// testCA signs the fake kubelets' serving certificates and the manager's
// client certificate.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for cn: a serving one for ips and names, or a
// client one when there are none.
func (ca *testCA) issue(t *testing.T, cn string, ips []net.IP, names ...string) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if len(ips) == 0 && len(names) == 0 {
		usage = x509.ExtKeyUsageClientAuth
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: ips, DNSNames: names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, certPEM, keyPEM
}

// file writes the CA's certificate where a --kubelet-ca-file would be.
func (ca *testCA) file(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubelet-ca.crt")
	if err := os.WriteFile(path, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeKubelet is one node's kubelet on its own port: it serves the
// resource and cadvisor pages of step to a client that shows token (or, with
// clientCA, a certificate it signed), and counts the pages it serves.
type fakeKubelet struct {
	token string
	// forbid answers 403, as a kubelet whose SubjectAccessReview says no.
	forbid bool

	mu    sync.Mutex
	step  step
	gets  map[string]int // by page
	auths []string       // how each request authenticated: "token", "cert"
}

func (k *fakeKubelet) set(st step) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.step = st
}

func (k *fakeKubelet) seen() (map[string]int, []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	gets := map[string]int{}
	for p, n := range k.gets {
		gets[p] = n
	}
	return gets, append([]string(nil), k.auths...)
}

func (k *fakeKubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := ""
	switch {
	case r.TLS != nil && len(r.TLS.VerifiedChains) > 0:
		auth = "cert"
	case k.token != "" && r.Header.Get("Authorization") == "Bearer "+k.token:
		auth = "token"
	default:
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	if k.forbid {
		http.Error(w, "Forbidden (user=system:serviceaccount:tailor-system:tailor, verb=get, resource=nodes, subresource(s)=[metrics])", http.StatusForbidden)
		return
	}
	page, ok := strings.CutPrefix(r.URL.Path, "/metrics/")
	if !ok || (page != "resource" && page != "cadvisor") {
		http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
		return
	}
	k.mu.Lock()
	if k.gets == nil {
		k.gets = map[string]int{}
	}
	k.gets[page]++
	k.auths = append(k.auths, auth)
	body := k.step.resource
	if page == "cadvisor" {
		body = k.step.cadvisor
	}
	k.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(body))
}

// startKubelet serves k over TLS on 127.0.0.1 with a certificate ca signs
// for the names given (127.0.0.1 when there are none); with clientCA, it
// verifies the client certificates that CA signs. It returns the port.
func startKubelet(t *testing.T, k http.Handler, ca, clientCA *testCA, names ...string) int32 {
	t.Helper()
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if len(names) > 0 {
		ips = nil
	}
	serving, _, _ := ca.issue(t, "kubelet", ips, names...)
	srv := httptest.NewUnstartedServer(k)
	// The refused handshakes are what some cases test.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA.cert)
		srv.TLS.ClientCAs, srv.TLS.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return int32(p)
}

// nodeGetter serves nodes as the manager's cache would.
func nodeGetter(nodes ...*corev1.Node) kubelet.NodeGetter {
	return func(_ context.Context, name string) (*corev1.Node, error) {
		for _, n := range nodes {
			if n.Name == name {
				return n.DeepCopy(), nil
			}
		}
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
}

// localNode is node name whose kubelet listens on 127.0.0.1:port.
func localNode(name string, port int32) *corev1.Node {
	return builder.Node(name).Address(corev1.NodeHostName, name+".invalid").Address(corev1.NodeInternalIP, "127.0.0.1").KubeletPort(port).Obj()
}

// The kubelet read on its own port, as the manager reads it by default:
// authenticated as the manager, its serving certificate verified.
func TestDirectUsage(t *testing.T) {
	ca, other := newCA(t, "cluster-ca"), newCA(t, "kubelet-self-signed-ca")
	_, clientCertPEM, clientKeyPEM := ca.issue(t, "tailor-manager", nil)
	pod := builder.Pod("web").Namespace("ns").Node("n1").Container(builder.Container("app")).Running().Obj()
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	mem := "1.048576e+08"
	rate := map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20,
		Throttled: ptr(0.8), ThrottledSince: t0}}
	const token = "manager-token"

	cases := map[string]struct {
		// signer signs the kubelet's serving certificate; names, if set,
		// are the only names it is for.
		signer *testCA
		names  []string
		// cfg is the manager's rest.Config (its credentials, the CA it
		// verifies the apiserver with).
		cfg         func(t *testing.T) *rest.Config
		opts        func(t *testing.T) kubelet.DirectOptions
		forbid      bool
		wantUsage   map[metrics.Key]metrics.Usage
		wantAuth    string
		wantErr     []string
		wantRefused string // NewDirect's error
	}{
		"bearer token, the serving certificate verified against the CA file": {
			signer:    ca,
			cfg:       func(*testing.T) *rest.Config { return &rest.Config{BearerToken: token} },
			opts:      func(t *testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{CAFile: ca.file(t)} },
			wantUsage: rate, wantAuth: "token",
		},
		"no CA file: the CA the manager verifies the apiserver with (the cluster CA)": {
			signer: ca,
			cfg: func(*testing.T) *rest.Config {
				return &rest.Config{BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem, ServerName: "kubernetes.default.svc"}}
			},
			opts:      func(*testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{} },
			wantUsage: rate, wantAuth: "token",
		},
		"client certificate, as a kubeconfig's": {
			signer: ca,
			cfg: func(*testing.T) *rest.Config {
				return &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem, CertData: clientCertPEM, KeyData: clientKeyPEM}}
			},
			opts:      func(*testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{} },
			wantUsage: rate, wantAuth: "cert",
		},
		"a self-signed kubelet certificate is refused, saying what to do": {
			signer: other,
			cfg: func(*testing.T) *rest.Config {
				return &rest.Config{BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}
			},
			opts: func(*testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{} },
			wantErr: []string{"read metrics/resource of node n1 at https://127.0.0.1:",
				"the kubelet's serving certificate does not verify against the CA the manager verifies the apiserver with",
				"x509: certificate signed by unknown authority",
				"give the CA that signs the kubelets' serving certificates with --kubelet-ca-file",
				"serverTLSBootstrap: true", "--kubelet-insecure-tls skips the check"},
		},
		"the wrong CA file is refused, naming it": {
			signer: other,
			cfg:    func(*testing.T) *rest.Config { return &rest.Config{BearerToken: token} },
			opts:   func(t *testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{CAFile: ca.file(t)} },
			wantErr: []string{"does not verify against /", "kubelet-ca.crt (tls: failed to verify certificate: x509: certificate signed by unknown authority)",
				"--kubelet-ca-file"},
		},
		"a certificate for another name is refused, pointing at the address types": {
			signer: ca, names: []string{"n1.example"},
			cfg:  func(*testing.T) *rest.Config { return &rest.Config{BearerToken: token} },
			opts: func(t *testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{CAFile: ca.file(t)} },
			wantErr: []string{"the kubelet's serving certificate does not name the address it was reached at",
				"x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs", "--kubelet-preferred-address-types"},
		},
		"insecure opt-out: a certificate no CA here signed is read": {
			signer: other,
			cfg: func(*testing.T) *rest.Config {
				return &rest.Config{BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}
			},
			opts:      func(*testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{InsecureSkipVerify: true} },
			wantUsage: rate, wantAuth: "token",
		},
		"a kubeconfig that skips the apiserver's check does not skip the kubelets'": {
			signer: other,
			cfg: func(*testing.T) *rest.Config {
				return &rest.Config{BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			},
			opts:    func(*testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{} },
			wantErr: []string{"the kubelet's serving certificate does not verify", "x509: certificate signed by unknown authority"},
		},
		"a CA file and the opt-out exclude each other": {
			signer: ca,
			cfg:    func(*testing.T) *rest.Config { return &rest.Config{BearerToken: token} },
			opts: func(t *testing.T) kubelet.DirectOptions {
				return kubelet.DirectOptions{CAFile: ca.file(t), InsecureSkipVerify: true}
			},
			wantRefused: "a kubelet CA file and skipping the kubelets' certificate check exclude each other",
		},
		"a CA file that cannot be read fails at the start": {
			signer:      ca,
			cfg:         func(*testing.T) *rest.Config { return &rest.Config{BearerToken: token} },
			opts:        func(*testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{CAFile: "/nonexistent/ca.crt"} },
			wantRefused: "the kubelets' client: open /nonexistent/ca.crt: no such file or directory",
		},
		"the manager's identity refused: the permission it needs is named": {
			signer: ca, forbid: true,
			cfg:  func(*testing.T) *rest.Config { return &rest.Config{BearerToken: token} },
			opts: func(t *testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{CAFile: ca.file(t)} },
			wantErr: []string{"the kubelet answered 403 Forbidden: Forbidden (user=system:serviceaccount:tailor-system:tailor, verb=get, resource=nodes, subresource(s)=[metrics])",
				"the manager's identity needs get on nodes/metrics"},
		},
		"credentials the kubelet does not accept": {
			signer:  ca,
			cfg:     func(*testing.T) *rest.Config { return &rest.Config{BearerToken: "someone-else"} },
			opts:    func(t *testing.T) kubelet.DirectOptions { return kubelet.DirectOptions{CAFile: ca.file(t)} },
			wantErr: []string{"the kubelet answered 401 Unauthorized: Unauthorized", "authentication.webhook"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k := &fakeKubelet{token: token, forbid: tc.forbid}
			port := startKubelet(t, k, tc.signer, ca, tc.names...)
			pages, err := kubelet.NewDirect(tc.cfg(t), nodeGetter(localNode("n1", port)), tc.opts(t))
			if tc.wantRefused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantRefused) {
					t.Fatalf("NewDirect error = %v, want one containing %q", err, tc.wantRefused)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewDirect: %v", err)
			}
			clk := clocktesting.NewFakePassiveClock(t0)
			src := kubelet.New(pages, kubelet.Options{Throttling: true, Clock: clk})
			var got metrics.Result
			for _, st := range []step{
				{now: t0, resource: resource(100, mem, t0), cadvisor: cadvisor(10, 100, t0)},
				{now: t0.Add(11 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second)), cadvisor: cadvisor(90, 200, t0.Add(10*time.Second))},
			} {
				k.set(st)
				clk.SetTime(st.now)
				got, err = src.Usage(context.Background(), []*corev1.Pod{pod})
				if len(tc.wantErr) > 0 {
					if err == nil {
						t.Fatalf("Usage: no error, want one containing %q", tc.wantErr)
					}
					for _, want := range tc.wantErr {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q\ndoes not contain %q", err, want)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("Usage: %v", err)
				}
			}
			if diff := cmp.Diff(tc.wantUsage, got.Usage); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
			if len(got.Problems) > 0 {
				t.Errorf("problems: %v", got.Problems)
			}
			gets, auths := k.seen()
			if diff := cmp.Diff(map[string]int{"resource": 2, "cadvisor": 2}, gets); diff != "" {
				t.Errorf("pages served by the kubelet (-want,+got):\n%s", diff)
			}
			for _, a := range auths {
				if a != tc.wantAuth {
					t.Errorf("a request authenticated by %q, want %q", a, tc.wantAuth)
				}
			}
		})
	}
}

// A node the manager's cache does not know, or whose addresses the
// preference does not cover, holds only its own containers.
func TestDirectNodeNotReachable(t *testing.T) {
	ca := newCA(t, "cluster-ca")
	k := &fakeKubelet{token: "t"}
	port := startKubelet(t, k, ca, nil)
	k.set(step{resource: resource(100, "1e8", t0)})
	nodes := nodeGetter(localNode("n1", port), builder.Node("n2").Address(corev1.NodeInternalDNS, "n2.internal").Obj())
	pages, err := kubelet.NewDirect(&rest.Config{BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}, nodes, kubelet.DirectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := kubelet.New(pages, kubelet.Options{Clock: clocktesting.NewFakePassiveClock(t0)})
	pods := []*corev1.Pod{
		builder.Pod("web").Namespace("ns").Node("n1").Container(builder.Container("app")).Running().Obj(),
		builder.Pod("db").Namespace("ns").Node("n2").Container(builder.Container("app")).Running().Obj(),
		builder.Pod("gone").Namespace("ns").Node("n3").Container(builder.Container("app")).Running().Obj(),
	}
	got, err := src.Usage(context.Background(), pods)
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	var problems []string
	for _, p := range got.Problems {
		problems = append(problems, p.String())
	}
	want := []string{
		`ns/db/app cpu Missing: read metrics/resource of node n2: the node has no address of the types InternalIP, ExternalIP, Hostname (it has ["InternalDNS"]): list one of its types in --kubelet-preferred-address-types`,
		`ns/db/app memory Missing: read metrics/resource of node n2: the node has no address of the types InternalIP, ExternalIP, Hostname (it has ["InternalDNS"]): list one of its types in --kubelet-preferred-address-types`,
		`ns/gone/app cpu Missing: read metrics/resource of node n3: nodes "n3" not found`,
		`ns/gone/app memory Missing: read metrics/resource of node n3: nodes "n3" not found`,
		"ns/web/app cpu WarmingUp: first sample of the CPU usage counter; a rate needs two",
	}
	sort.Strings(problems)
	if diff := cmp.Diff(want, problems); diff != "" {
		t.Errorf("problems (-want,+got):\n%s", diff)
	}
}
