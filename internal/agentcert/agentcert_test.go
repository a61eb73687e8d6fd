package agentcert

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/cert"

	"github.com/tailorhq/tailor/internal/agent/report"
)

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

var names = DNSNames("tailor-manager-agents", "tailor-system")

// serverName is the name the agents check.
var serverName = report.ServerName("tailor-manager-agents", "tailor-system")

func mustCA(t *testing.T, now time.Time) (*Bundle, *x509.Certificate) {
	t.Helper()
	b, err := Apply(Decision{Action: Create}, nil, now, names)
	if err != nil {
		t.Fatal(err)
	}
	return b, b.Signing
}

// The CA signs certificates only, for ten years; the serving certificate
// serves TLS only, for the Service's four names, for a year, and chains
// to the CA for the name the agents check.
func TestIssue(t *testing.T) {
	b, ca := mustCA(t, t0)
	c := b.Cert
	type shape struct {
		IsCA           bool
		MaxPathLenZero bool
		KeyUsage       x509.KeyUsage
		ExtKeyUsage    []x509.ExtKeyUsage
		DNSNames       []string
		NotBefore      time.Time
		NotAfter       time.Time
	}
	of := func(c *x509.Certificate) shape {
		return shape{c.IsCA, c.MaxPathLenZero, c.KeyUsage, c.ExtKeyUsage, c.DNSNames, c.NotBefore, c.NotAfter}
	}
	wantCA := shape{IsCA: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(10 * 365 * day)}
	if diff := cmp.Diff(wantCA, of(ca)); diff != "" {
		t.Errorf("CA (-want,+got):\n%s", diff)
	}
	wantCert := shape{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:  []string{"tailor-manager-agents", "tailor-manager-agents.tailor-system", "tailor-manager-agents.tailor-system.svc", "tailor-manager-agents.tailor-system.svc.cluster.local"},
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(365 * day)}
	if diff := cmp.Diff(wantCert, of(c)); diff != "" {
		t.Errorf("serving certificate (-want,+got):\n%s", diff)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range append(names, serverName) {
		if _, err := c.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the certificate does not verify for %s: %v", name, err)
		}
	}
	// The serving certificate cannot sign: a stolen one makes no others.
	if err := c.CheckSignatureFrom(c); err == nil {
		t.Error("the serving certificate can sign certificates")
	}
	// Nor can a client use it to authenticate.
	if _, err := c.Verify(x509.VerifyOptions{DNSName: serverName, Roots: roots, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the serving certificate verifies as a client certificate")
	}
	// Never past its CA.
	late := t0.Add(10*365*day - 30*day)
	key, _ := NewKey()
	capped, err := NewServingCert(late, ca, b.CAKey, names, key)
	if err != nil {
		t.Fatal(err)
	}
	if !capped.NotAfter.Equal(ca.NotAfter) {
		t.Errorf("a certificate signed a month before its CA expires lasts until %s, past the CA's %s", capped.NotAfter, ca.NotAfter)
	}
}

// Renewal is due once two thirds of a certificate's life have passed,
// from its (backdated) start.
func TestDue(t *testing.T) {
	b, ca := mustCA(t, t0)
	cases := map[string]struct {
		cert *x509.Certificate
		now  time.Time
		want bool
	}{
		"certificate, new":                 {b.Cert, t0, false},
		"certificate, just before 2/3":     {b.Cert, t0.Add(-time.Hour + (365*day+time.Hour)*2/3 - time.Second), false},
		"certificate, at 2/3":              {b.Cert, t0.Add(-time.Hour + (365*day+time.Hour)*2/3), true},
		"certificate, expired":             {b.Cert, t0.Add(400 * day), true},
		"CA, after a year":                 {ca, t0.Add(365 * day), false},
		"CA, six and a half years":         {ca, t0.Add(6*365*day + 180*day), false},
		"CA, two thirds of its ten years":  {ca, t0.Add(-time.Hour + (10*365*day+time.Hour)*2/3), true},
		"CA, before its (backdated) start": {ca, t0.Add(-2 * time.Hour), false},
	}
	for name, tc := range cases {
		if got := Due(tc.cert, tc.now); got != tc.want {
			t.Errorf("%s: Due at %s = %t, want %t (renews at %s)", name, tc.now, got, tc.want, RenewAt(tc.cert))
		}
	}
}

func TestDecide(t *testing.T) {
	fresh, ca := mustCA(t, t0)
	// A CA rotated at t1, the certificate still signed by the old one.
	t1 := t0.Add(7 * 365 * day)
	rotated, err := Apply(Decision{Action: RotateCA}, mustReissue(t, fresh, t1.Add(-day), names), t1, names)
	if err != nil {
		t.Fatal(err)
	}
	// The old CA expired at t2, its certificate long replaced.
	t2 := ca.NotAfter
	reissued, err := Apply(Decision{Action: Reissue}, rotated, t1.Add(CAOverlap+time.Hour), names)
	if err != nil {
		t.Fatal(err)
	}
	renamed := *fresh
	renamed.Cert = mustReissue(t, fresh, t0, DNSNames("old", "tailor-system")).Cert
	foreign, _ := mustCA(t, t0)
	stranger := *fresh
	stranger.Cert, stranger.Key = foreign.Cert, foreign.Key
	cases := map[string]struct {
		in         Input
		wantAction Action
		wantNext   time.Time
	}{
		"no Secret":  {in: Input{Now: t0}, wantAction: Create},
		"unreadable": {in: Input{Now: t0, Found: true, ParseErr: errors.New("tls.key: no key")}, wantAction: Replace},
		"fresh":      {in: Input{Now: t0, Found: true, Bundle: fresh}, wantAction: Keep, wantNext: RenewAt(fresh.Cert)},
		"certificate due": {
			in: Input{Now: RenewAt(fresh.Cert), Found: true, Bundle: fresh}, wantAction: Reissue},
		"certificate for other names": {
			in: Input{Now: t0, Found: true, Bundle: &renamed}, wantAction: Reissue},
		"certificate from no CA of the bundle": {
			in: Input{Now: t0, Found: true, Bundle: &stranger}, wantAction: Reissue},
		"CA due": {
			in: Input{Now: RenewAt(ca), Found: true, Bundle: mustReissue(t, fresh, RenewAt(ca).Add(-day), names)}, wantAction: RotateCA},
		"CA expired": {
			in: Input{Now: ca.NotAfter, Found: true, Bundle: fresh}, wantAction: Replace},
		"new CA published, not yet long enough": {
			in: Input{Now: t1.Add(time.Hour), Found: true, Bundle: rotated}, wantAction: Keep, wantNext: t1.Add(CAOverlap)},
		"new CA published long enough": {
			in: Input{Now: t1.Add(CAOverlap), Found: true, Bundle: rotated}, wantAction: Reissue},
		"replaced CA still valid": {
			in: Input{Now: t1.Add(CAOverlap + 2*time.Hour), Found: true, Bundle: reissued}, wantAction: Keep, wantNext: RenewAt(reissued.Cert)},
		"replaced CA expired": {
			in: Input{Now: t2, Found: true, Bundle: mustReissue(t, reissued, t2.Add(-day), names)}, wantAction: Prune},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.DNSNames = names
			got := Decide(tc.in)
			if got.Action != tc.wantAction || !got.Next.Equal(tc.wantNext) {
				t.Errorf("Decide = %s (%q) next %s, want %s next %s", got.Action, got.Reason, got.Next, tc.wantAction, tc.wantNext)
			}
			if got.Action != Keep && got.Reason == "" {
				t.Errorf("%s without a reason", got.Action)
			}
		})
	}
}

func mustReissue(t *testing.T, b *Bundle, now time.Time, dnsNames []string) *Bundle {
	t.Helper()
	out, err := Apply(Decision{Action: Reissue}, b, now, dnsNames)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Twenty years a week at a time, each week's decisions carried out and
// written as a Secret and read back: the certificate served always passes
// the agents' check, against the bundle published that week and against
// the week before's (an agent that has not seen the new one yet), except
// when there was no usable Secret at all. Every kind of step happens.
func TestTwentyYears(t *testing.T) {
	var data map[string][]byte
	published := []byte(nil)
	seen := map[Action]int{}
	for now := t0; now.Before(t0.Add(20 * 365 * day)); now = now.Add(7 * day) {
		for step := 0; ; step++ {
			in := Input{Now: now, DNSNames: names, Found: data != nil}
			if data != nil {
				in.Bundle, in.ParseErr = Parse(data)
			}
			d := Decide(in)
			seen[d.Action]++
			if d.Action == Keep {
				if !d.Next.After(now) {
					t.Fatalf("%s: Keep until %s, not after now", now, d.Next)
				}
				break
			}
			if step > 3 {
				t.Fatalf("%s: still deciding after %d steps: %s (%s)", now, step, d.Action, d.Reason)
			}
			b, err := Apply(d, in.Bundle, now, names)
			if err != nil {
				t.Fatal(err)
			}
			if data, err = b.Data(); err != nil {
				t.Fatal(err)
			}
			if d.Action == Create || d.Action == Replace {
				published = nil
			}
		}
		if _, err := Serving(data, serverName, now); err != nil {
			t.Fatalf("%s: the certificate served fails the agents' check: %v", now, err)
		}
		if published != nil {
			old := map[string][]byte{CertKey: data[CertKey], KeyKey: data[KeyKey], BundleKey: published}
			if _, err := Serving(old, serverName, now); err != nil {
				t.Fatalf("%s: an agent holding last week's bundle refuses today's certificate: %v", now, err)
			}
		}
		published = data[BundleKey]
		if cas, _ := cert.ParseCertsPEM(published); len(cas) > 2 {
			t.Fatalf("%s: %d CAs published: expired ones are kept", now, len(cas))
		}
	}
	t.Logf("decisions over 20 years, a week at a time: %v", seen)
	for _, a := range []Action{Create, RotateCA, Reissue, Prune} {
		if seen[a] == 0 {
			t.Errorf("no %s in 20 years", a)
		}
	}
	if seen[Replace] != 0 {
		t.Errorf("the Secret was replaced %d times: a rotation let something expire", seen[Replace])
	}
}

// What an operator brings (cert-manager's layout: tls.crt, tls.key,
// ca.crt) is served only if the agents would take it.
func TestServing(t *testing.T) {
	b, _ := mustCA(t, t0)
	good, err := b.Data()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := mustCA(t, t0)
	otherData, _ := other.Data()
	with := func(k string, v []byte) map[string][]byte {
		out := map[string][]byte{}
		for key, val := range good {
			if key != CAKeyKey {
				out[key] = val
			}
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	cases := map[string]struct {
		data       map[string][]byte
		serverName string
		now        time.Time
		wantErr    string
	}{
		"provided, no CA key":       {data: with(CAKeyKey, nil), serverName: serverName, now: t0},
		"no ca.crt":                 {data: with(BundleKey, nil), serverName: serverName, now: t0, wantErr: "no ca.crt"},
		"ca.crt of another CA":      {data: with(BundleKey, otherData[BundleKey]), serverName: serverName, now: t0, wantErr: "unknown authority"},
		"key of another cert":       {data: with(KeyKey, otherData[KeyKey]), serverName: serverName, now: t0, wantErr: "private key does not match"},
		"for another Service":       {data: good, serverName: "other.tailor-system.svc", now: t0, wantErr: "not other.tailor-system.svc"},
		"expired":                   {data: good, serverName: serverName, now: t0.Add(366 * day), wantErr: "expired"},
		"the managers' own, in use": {data: good, serverName: serverName, now: t0.Add(200 * day)},
	}
	for name, tc := range cases {
		_, err := Serving(tc.data, tc.serverName, tc.now)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.wantErr)
		}
	}
}

// Parse refuses a Secret whose parts do not belong together.
func TestParse(t *testing.T) {
	b, _ := mustCA(t, t0)
	good, _ := b.Data()
	other, _ := mustCA(t, t0)
	otherData, _ := other.Data()
	if _, err := Parse(good); err != nil {
		t.Fatalf("the managers' own Secret: %v", err)
	}
	for name, data := range map[string]map[string][]byte{
		"empty":                       {},
		"CA key of another CA":        {BundleKey: good[BundleKey], CAKeyKey: otherData[CAKeyKey], CertKey: good[CertKey], KeyKey: good[KeyKey]},
		"serving key of another cert": {BundleKey: good[BundleKey], CAKeyKey: good[CAKeyKey], CertKey: good[CertKey], KeyKey: otherData[KeyKey]},
	} {
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
