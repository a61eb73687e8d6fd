//go:build controller

package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/agentcert"
	"github.com/tailorhq/tailor/internal/manager"
)

// Two managers start at once on a namespace with no certificate yet: one
// creates the Secret, the other finds it there and reads it back, and both
// serve the same certificate, whose CA is published (and no key). An agent
// that checks them against that CA, for the Service's name, is taken; a
// report sent in plain HTTP to the same port is refused before it is read,
// its token never reviewed.
func TestAgentTLSManagersServeOneCertificate(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	token := e.agentToken("agent-0", e.node)
	opts := manager.Options{AgentServiceAccount: e.ns + ":agent", AgentFallback: "none", AgentService: e.ns + "/" + agentService,
		Namespaces: []string{e.ns}, SyncPeriod: time.Hour}
	var addrs [2]string
	var wg sync.WaitGroup
	for i := range addrs {
		wg.Go(func() { addrs[i] = runAgentManager(t, opts) })
	}
	wg.Wait()
	client := agentClient(t, e.ns)

	var served [2][]byte
	for i, addr := range addrs {
		served[i] = servedCertificate(t, client, addr)
	}
	if !bytes.Equal(served[0], served[1]) {
		t.Fatal("the two managers serve different certificates")
	}
	s, err := clientset.CoreV1().Secrets(e.ns).Get(context.Background(), manager.DefaultAgentTLSSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(s.Data[agentcert.CertKey], pemOf(served[0])) {
		t.Error("the certificate served is not the Secret's")
	}
	cm, err := clientset.CoreV1().ConfigMaps(e.ns).Get(context.Background(), manager.DefaultAgentCAConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cm.Data[report.CABundleKey], string(s.Data[agentcert.BundleKey]); got != want || len(cm.Data) != 1 {
		t.Errorf("ConfigMap %s holds %v, want the Secret's ca.crt alone", cm.Name, cm.Data)
	}
	for k, v := range cm.Data {
		if strings.Contains(v, "PRIVATE KEY") {
			t.Errorf("the published ConfigMap's %s holds a private key", k)
		}
	}
	if cas, err := cert.ParseCertsPEM([]byte(cm.Data[report.CABundleKey])); err != nil || len(cas) != 1 || !cas[0].IsCA {
		t.Errorf("published bundle: %d certificates (%v), want the one CA", len(cas), err)
	}

	counted := func() float64 {
		var n float64
		for _, r := range []string{"ok", "urgent", "unauthenticated", "forbidden", "throttled", "invalid", "error"} {
			n += metricValue(t, "tailor_agent_reports_total", map[string]string{"result": r})
		}
		return n
	}
	body, _ := json.Marshal(report.Report{Containers: []report.Container{}})
	post := func(c *http.Client, url string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		defer func() { _ = resp.Body.Close() }()
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return resp.StatusCode, msg.String()
	}
	for _, addr := range addrs {
		before := counted()
		if code, msg := post(client, "https://"+addr+report.Path); code != http.StatusNoContent {
			t.Errorf("a report over TLS to %s: HTTP %d %s", addr, code, msg)
		}
		if got := counted() - before; got != 1 {
			t.Errorf("the report over TLS counted %v times, want once", got)
		}
		before = counted()
		code, msg := post(&http.Client{Timeout: 5 * time.Second}, "http://"+addr+report.Path)
		if code != http.StatusBadRequest || !strings.Contains(msg, "HTTPS") {
			t.Errorf("a report in plain HTTP to %s: HTTP %d %q, want 400 from the TLS server", addr, code, msg)
		}
		if got := counted() - before; got != 0 {
			t.Errorf("the plain HTTP report reached the receiver (%v counted)", got)
		}
	}
}

// servedCertificate is the certificate the manager at addr serves,
// through c (which checks it): polled until the manager listens.
func servedCertificate(t *testing.T, c *http.Client, addr string) []byte {
	t.Helper()
	var der []byte
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+report.Path, nil)
		resp, err := c.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening, or no certificate yet
		}
		_ = resp.Body.Close()
		der = resp.TLS.PeerCertificates[0].Raw
		return true, nil
	})
	if err != nil {
		t.Fatalf("the manager at %s served no certificate the agent takes within 2m", addr)
	}
	return der
}

func pemOf(der []byte) []byte {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil
	}
	out, _ := cert.EncodeCertificates(c)
	return out
}

// Keepers racing on a namespace with no Secret: exactly one creates it,
// all load its certificate.
func TestAgentTLSKeepersRace(t *testing.T) {
	ns := "ctl-tls-" + rand.String(5)
	if err := apiClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	keepers := make([]*agentcert.Keeper, 6)
	for i := range keepers {
		keepers[i] = newKeeper(t, ns, clocktesting.NewFakeClock(time.Now()))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, len(keepers))
	for i, k := range keepers {
		wg.Go(func() {
			<-start
			_, errs[i] = k.Sync(context.Background())
		})
	}
	close(start)
	wg.Wait()
	var first []byte
	for i, k := range keepers {
		if errs[i] != nil {
			t.Fatalf("keeper %d: %v", i, errs[i])
		}
		c, err := k.GetCertificate(nil)
		if err != nil {
			t.Fatalf("keeper %d: %v", i, err)
		}
		if first == nil {
			first = c.Certificate[0]
		} else if !bytes.Equal(first, c.Certificate[0]) {
			t.Errorf("keeper %d serves another certificate than keeper 0", i)
		}
	}
}

func newKeeper(t *testing.T, ns string, clk *clocktesting.FakeClock) *agentcert.Keeper {
	return &agentcert.Keeper{
		Client: clientset, Namespace: ns, Secret: manager.DefaultAgentTLSSecret, ConfigMap: manager.DefaultAgentCAConfigMap,
		DNSNames: agentcert.DNSNames(agentService, ns), ServerName: report.ServerName(agentService, ns),
		Clock: clk, Log: testr.New(t),
	}
}

// The certificate is renewed, and the CA replaced, as time passes, with no
// restart: the keeper serves each new certificate from its next sync, an
// agent holding the bundle published before each step still takes the
// certificate served after it, and a new CA signs only once it has been
// published for agentcert.CAOverlap.
func TestAgentTLSRenewsWithoutRestart(t *testing.T) {
	ns := "ctl-tls-" + rand.String(5)
	if err := apiClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	k := newKeeper(t, ns, clk)
	serverName := report.ServerName(agentService, ns)
	sync := func() (*x509.Certificate, []byte) {
		t.Helper()
		if _, err := k.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, err := k.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), manager.DefaultAgentCAConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf, []byte(cm.Data[report.CABundleKey])
	}
	// handshake is an agent holding bundle connecting to the keeper now.
	handshake := func(bundle []byte) error {
		pool, err := cert.NewPoolFromBytes(bundle)
		if err != nil {
			return err
		}
		server, client := tlsPipe(k.GetCertificate, &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS13, Time: clk.Now})
		defer func() { _ = server.Close() }()
		return client.Handshake()
	}
	first, bundle := sync()
	if err := handshake(bundle); err != nil {
		t.Fatalf("the first certificate: %v", err)
	}
	// A year's certificate is renewed with a third of it left.
	clk.SetTime(agentcert.RenewAt(first).Add(time.Minute))
	renewed, bundle2 := sync()
	if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 || !bytes.Equal(bundle, bundle2) {
		t.Fatalf("after %s: serving serial %s (was %s), bundle changed %t: want a new certificate from the same CA",
			clk.Now().Sub(first.NotBefore), renewed.SerialNumber, first.SerialNumber, !bytes.Equal(bundle, bundle2))
	}
	if err := handshake(bundle); err != nil {
		t.Errorf("an agent with the bundle it had refuses the renewed certificate: %v", err)
	}
	// Years on, the CA is due: a new one is published beside it, the
	// certificate served stays the old CA's for a day, then moves.
	s, _ := clientset.CoreV1().Secrets(ns).Get(context.Background(), manager.DefaultAgentTLSSecret, metav1.GetOptions{})
	ca := mustParseCA(t, s.Data[agentcert.BundleKey])
	last := renewed
	for clk.Now().Before(agentcert.RenewAt(ca)) {
		next := agentcert.RenewAt(last)
		if due := agentcert.RenewAt(ca); due.Before(next) {
			next = due
		}
		clk.SetTime(next.Add(time.Minute))
		last, _ = sync()
	}
	before, old := sync()
	if n := len(mustParseBundle(t, old)); n != 2 {
		t.Fatalf("at %s, past the CA's renewal: %d CAs published, want the new one beside the old", clk.Now(), n)
	}
	if err := before.CheckSignatureFrom(ca); err != nil {
		t.Errorf("the certificate moved to the new CA as soon as it was published: %v", err)
	}
	clk.Step(agentcert.CAOverlap + time.Minute)
	after, bundle3 := sync()
	if after.CheckSignatureFrom(ca) == nil {
		t.Fatalf("a day after the new CA was published the certificate is still the old CA's")
	}
	if err := handshake(old); err != nil {
		t.Errorf("an agent holding the bundle published with the new CA refuses the certificate it signs: %v", err)
	}
	if err := handshake(bundle3); err != nil {
		t.Errorf("the new certificate against the new bundle: %v", err)
	}
}

func mustParseBundle(t *testing.T, pem []byte) []*x509.Certificate {
	t.Helper()
	cas, err := cert.ParseCertsPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	return cas
}

func mustParseCA(t *testing.T, pem []byte) *x509.Certificate {
	t.Helper()
	cas := mustParseBundle(t, pem)
	if len(cas) != 1 {
		t.Fatalf("%d CAs, want 1", len(cas))
	}
	return cas[0]
}

// tlsPipe is a TLS server serving getCert and a client with cfg, joined
// in memory; the server's side of the handshake runs on its own.
func tlsPipe(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), cfg *tls.Config) (*tls.Conn, *tls.Conn) {
	a, b := net.Pipe()
	server := tls.Server(a, &tls.Config{GetCertificate: getCert, MinVersion: tls.VersionTLS13})
	go func() { _ = server.Handshake() }()
	return server, tls.Client(b, cfg)
}

// A Secret of that name the managers did not make (cert-manager's, say,
// named without --agent-tls-provided) is never overwritten: the keeper
// says what to do instead, and serves nothing.
func TestAgentTLSLeavesOthersSecrets(t *testing.T) {
	ns := "ctl-tls-" + rand.String(5)
	if err := apiClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: manager.DefaultAgentTLSSecret, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("theirs"), corev1.TLSPrivateKeyKey: []byte("theirs")}}
	if _, err := clientset.CoreV1().Secrets(ns).Create(context.Background(), theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := newKeeper(t, ns, clocktesting.NewFakeClock(time.Now()))
	if _, err := k.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "--agent-tls-provided") {
		t.Errorf("Sync on someone else's Secret: %v, want an error naming --agent-tls-provided", err)
	}
	got, err := clientset.CoreV1().Secrets(ns).Get(context.Background(), manager.DefaultAgentTLSSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data[corev1.TLSCertKey]) != "theirs" || len(got.Data) != 2 {
		t.Errorf("the Secret was written: its tls.crt is %d bytes, %d keys", len(got.Data[corev1.TLSCertKey]), len(got.Data))
	}
	if _, err := k.GetCertificate(nil); err == nil {
		t.Error("a certificate is served")
	}
}
