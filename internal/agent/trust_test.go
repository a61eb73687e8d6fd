package agent

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/agentcert"
)

// manager is a TLS server standing in for a manager: it serves the
// certificate of a Secret the managers made for Service svc, and records
// the tokens it was sent.
type manager struct {
	srv    *httptest.Server
	bundle []byte
	mu     sync.Mutex
	tokens []string
}

const svc, svcNamespace = "tailor-manager-agents", "tailor-system"

func newManager(t *testing.T, dnsNames []string) *manager {
	t.Helper()
	b, err := agentcert.Apply(agentcert.Decision{Action: agentcert.Create}, nil, time.Now(), dnsNames)
	if err != nil {
		t.Fatal(err)
	}
	data, err := b.Data()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(data[agentcert.CertKey], data[agentcert.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	m := &manager{bundle: data[agentcert.BundleKey]}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.tokens = append(m.tokens, r.Header.Get("Authorization"))
		m.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	m.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	m.srv.StartTLS()
	t.Cleanup(m.srv.Close)
	return m
}

func (m *manager) sent() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.tokens...)
}

// pushOnce pushes one report to urls, trusting bundle (nil: none yet),
// and says whether every manager took it.
func pushOnce(t *testing.T, urls []string, bundle []byte) (bool, *Metrics) {
	t.Helper()
	trust := NewTrust(report.ServerName(svc, svcNamespace), 2*time.Second)
	if bundle != nil {
		if _, err := trust.SetBundle(bundle); err != nil {
			t.Fatal(err)
		}
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("the-agents-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	o := Options{TokenFile: tokenFile, Managers: StaticManagers(urls), Trust: trust, Log: logr.Discard(), Metrics: m}
	failed := push(context.Background(), o, &report.Report{})
	return !failed, m
}

// The agent pushes only to a manager whose certificate chains to the CA
// bundle the managers published and names their Service; to any other it
// sends nothing, its token least of all; and with no bundle yet it does
// not push at all.
func TestPushVerifiesTheManagers(t *testing.T) {
	ours := newManager(t, agentcert.DNSNames(svc, svcNamespace))
	impostor := newManager(t, agentcert.DNSNames(svc, svcNamespace))
	otherService := newManager(t, agentcert.DNSNames("elsewhere", svcNamespace))
	// The test servers listen on 127.0.0.1, as managers on pod IPs: the
	// name checked is the Service's, not the address dialled.
	cases := map[string]struct {
		m       *manager
		bundle  []byte
		wantOK  bool
		wantRes string
	}{
		"signed by the published CA":               {m: ours, bundle: ours.bundle, wantOK: true, wantRes: "ok"},
		"signed by another CA":                     {m: impostor, bundle: ours.bundle, wantRes: "error"},
		"the published CA, for another Service":    {m: otherService, bundle: otherService.bundle, wantRes: "error"},
		"no CA published yet":                      {m: ours, wantRes: "no-ca"},
		"an older bundle beside the published one": {m: ours, bundle: append(append([]byte(nil), impostor.bundle...), ours.bundle...), wantOK: true, wantRes: "ok"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := len(tc.m.sent())
			ok, m := pushOnce(t, []string{tc.m.srv.URL}, tc.bundle)
			if ok != tc.wantOK {
				t.Errorf("push taken: %t, want %t", ok, tc.wantOK)
			}
			if got := pushes(m, tc.wantRes); got != 1 {
				t.Errorf("tailor_agent_pushes_total{result=%q} = %v, want 1", tc.wantRes, got)
			}
			got := tc.m.sent()[before:]
			if tc.wantOK && (len(got) != 1 || got[0] != "Bearer the-agents-token") {
				t.Errorf("the manager got tokens %q, want the agent's once", got)
			}
			if !tc.wantOK && len(got) != 0 {
				t.Errorf("the server got the agent's token: %q", got)
			}
		})
	}
}

// Whatever URL it is given and wherever a manager points it, the agent
// sends its token over TLS only: never to an http URL, never after a
// redirect.
func TestTokenNeverOverPlainHTTP(t *testing.T) {
	var mu sync.Mutex
	var plain []string
	http1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		plain = append(plain, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer http1.Close()
	ours := newManager(t, agentcert.DNSNames(svc, svcNamespace))
	redirect := newManager(t, agentcert.DNSNames(svc, svcNamespace))
	redirect.srv.Config.Handler = http.RedirectHandler(http1.URL+report.Path, http.StatusTemporaryRedirect)

	if ok, m := pushOnce(t, []string{http1.URL}, ours.bundle); ok || pushes(m, "error") != 1 {
		t.Errorf("a push to %s was taken", http1.URL)
	}
	if ok, _ := pushOnce(t, []string{redirect.srv.URL}, redirect.bundle); ok {
		t.Error("a push answered with a redirect to plain HTTP was taken")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(plain) != 0 {
		t.Errorf("the plain HTTP server was sent %d requests (tokens %q)", len(plain), plain)
	}
	// The URLs the agent makes from the managers' endpoints are https.
	slice := &discoveryv1.EndpointSlice{
		Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("agent"), Port: ptr.To[int32](8444)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.2"}}},
	}
	if got := endpointURLs([]*discoveryv1.EndpointSlice{slice}, "agent"); len(got) != 1 || !strings.HasPrefix(got[0], "https://") {
		t.Errorf("endpoint URLs %q, want one https URL", got)
	}
}

// A new bundle replaces the old: a manager whose CA is no longer published
// is no longer trusted, and a bundle with no certificate is refused.
func TestTrustSetBundle(t *testing.T) {
	a := newManager(t, agentcert.DNSNames(svc, svcNamespace))
	b := newManager(t, agentcert.DNSNames(svc, svcNamespace))
	trust := NewTrust(report.ServerName(svc, svcNamespace), 2*time.Second)
	post := func(m *manager) error {
		c, err := trust.Client()
		if err != nil {
			return err
		}
		resp, err := c.Post(m.srv.URL+report.Path, "application/json", strings.NewReader("{}"))
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if changed, err := trust.SetBundle(a.bundle); !changed || err != nil {
		t.Fatalf("first bundle: changed %t, %v", changed, err)
	}
	if changed, _ := trust.SetBundle(a.bundle); changed {
		t.Error("the same bundle again changed the client")
	}
	if err := post(a); err != nil {
		t.Errorf("a manager signed by the bundle: %v", err)
	}
	if _, err := trust.SetBundle(b.bundle); err != nil {
		t.Fatal(err)
	}
	if err := post(a); err == nil {
		t.Error("the old CA is still trusted after a new bundle")
	}
	if err := post(b); err != nil {
		t.Errorf("a manager signed by the new bundle: %v", err)
	}
	if _, err := trust.SetBundle([]byte("not a certificate")); err == nil {
		t.Error("a bundle with no certificate was taken")
	}
	if err := post(b); err != nil {
		t.Errorf("after a bad bundle, the good one before: %v", err)
	}
}

// pushes is tailor_agent_pushes_total{result}.
func pushes(m *Metrics, result string) float64 {
	var out dto.Metric
	_ = m.pushes.WithLabelValues(result).Write(&out)
	return out.GetCounter().GetValue()
}
