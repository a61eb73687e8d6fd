package agentcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// How long what the managers make lasts. The CA is long-lived, as
// client-go's self-signed CAs are (10 years), because replacing it takes
// a staged hand-over (CAOverlap); the serving certificate is replaced on
// its own, with nothing for the agents to learn, so it lives a year.
// Each is renewed when a third of its life is left (RenewAt).
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
	// Backdate is how far before its making a certificate is valid from:
	// an agent whose node's clock runs behind the manager's still takes
	// a certificate issued a moment ago.
	Backdate = time.Hour
)

// NewKey is a new P-256 key: small, fast to make and to handshake with.
func NewKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// NewCA makes a self-signed CA valid from now (less Backdate) for
// CAValidity. It signs certificates only: no path below the serving
// certificate (MaxPathLen 0).
//
// client-go's cert.NewSelfSignedCACert would do, but takes its expiry
// from the wall clock; here the time is an argument, so the renewal is
// tested with a fake clock.
func NewCA(now time.Time, key crypto.Signer) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("tailor-agent-ca@%d", now.Unix())},
		NotBefore:             now.Add(-Backdate).UTC(),
		NotAfter:              now.Add(CAValidity).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key.Public(), key)
}

// NewServingCert makes a certificate for dnsNames, for serving TLS only,
// signed by ca with caKey: valid from now (less Backdate) for
// CertValidity, and never past ca's own expiry.
func NewServingCert(now time.Time, ca *x509.Certificate, caKey crypto.Signer, dnsNames []string, key crypto.Signer) (*x509.Certificate, error) {
	if len(dnsNames) == 0 {
		return nil, fmt.Errorf("a serving certificate needs at least one DNS name")
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(CertValidity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              dnsNames,
		NotBefore:             now.Add(-Backdate).UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	return sign(tmpl, ca, key.Public(), caKey)
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	return x509.ParseCertificate(der)
}

// newSerial is a random 128-bit serial number (RFC 5280 allows up to 20
// octets; CA/Browser Forum practice is at least 64 random bits).
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// DNSNames are the names of Service service in namespace that the serving
// certificate is for: every form a client in the cluster may use. The
// agents check the .svc form (report.ServerName), which holds whatever
// the cluster's domain.
func DNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}
