package agentcert

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/tailorhq/tailor/internal/agent/report"
)

// The Secret's keys: a kubernetes.io/tls Secret's two, and the CA bundle
// under cert-manager's name for it, so that a Secret cert-manager writes
// can take the place of the managers' own. CAKeyKey, the CA's private key,
// is in the managers' own Secret only.
const (
	CertKey   = corev1.TLSCertKey
	KeyKey    = corev1.TLSPrivateKeyKey
	BundleKey = report.CABundleKey
	CAKeyKey  = "ca.key"
)

// Bundle is the managers' own Secret, parsed.
type Bundle struct {
	// CAs are what the agents trust (ca.crt): Signing first, then CAs
	// replaced by it that have not expired yet.
	CAs []*x509.Certificate
	// Signing is the CA whose key is CAKey: it signs every new serving
	// certificate.
	Signing *x509.Certificate
	CAKey   crypto.Signer
	// Cert is the serving certificate (tls.crt) and Key its key.
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Parse reads the managers' own Secret. Anything missing or unreadable is
// an error: the Secret is then replaced whole.
func Parse(data map[string][]byte) (*Bundle, error) {
	var errs []error
	cas, err := cert.ParseCertsPEM(data[BundleKey])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", BundleKey, err))
	}
	caKey, err := parseKey(data[CAKeyKey])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", CAKeyKey, err))
	}
	certs, err := cert.ParseCertsPEM(data[CertKey])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", CertKey, err))
	}
	key, err := parseKey(data[KeyKey])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", KeyKey, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	b := &Bundle{CAKey: caKey, Cert: certs[0], Key: key}
	for _, ca := range cas {
		if ca.IsCA && samePublicKey(ca.PublicKey, caKey.Public()) && b.Signing == nil {
			b.Signing = ca
			continue
		}
		b.CAs = append(b.CAs, ca)
	}
	if b.Signing == nil {
		return nil, fmt.Errorf("%s is the key of none of the CAs in %s", CAKeyKey, BundleKey)
	}
	b.CAs = append([]*x509.Certificate{b.Signing}, b.CAs...)
	if !samePublicKey(b.Cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%s is not the key of the certificate in %s", KeyKey, CertKey)
	}
	return b, nil
}

func parseKey(pem []byte) (crypto.Signer, error) {
	k, err := keyutil.ParsePrivateKeyPEM(pem)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", k)
	}
	return s, nil
}

func samePublicKey(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// Data is b as the Secret's data.
func (b *Bundle) Data() (map[string][]byte, error) {
	cas, err := cert.EncodeCertificates(b.CAs...)
	if err != nil {
		return nil, err
	}
	caKey, err := keyutil.MarshalPrivateKeyToPEM(b.CAKey)
	if err != nil {
		return nil, err
	}
	crt, err := cert.EncodeCertificates(b.Cert)
	if err != nil {
		return nil, err
	}
	key, err := keyutil.MarshalPrivateKeyToPEM(b.Key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{BundleKey: cas, CAKeyKey: caKey, CertKey: crt, KeyKey: key}, nil
}

// Serving checks data, the managers' own Secret's or an operator's, the way
// an agent will at now: tls.crt and tls.key are a pair, and tls.crt chains
// to a CA of ca.crt for serverName (the name the agents check) as a server
// certificate. It returns the pair to serve.
func Serving(data map[string][]byte, serverName string, now time.Time) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(data[CertKey], data[KeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", CertKey, KeyKey, err)
	}
	if len(bytes.TrimSpace(data[BundleKey])) == 0 {
		return nil, fmt.Errorf("no %s: the agents would have no CA to check the certificate against", BundleKey)
	}
	roots, err := cert.NewPoolFromBytes(data[BundleKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", BundleKey, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CertKey, err)
		}
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		DNSName: serverName, Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, fmt.Errorf("the agents would refuse the certificate in %s: %w", CertKey, err)
	}
	pair.Leaf = leaf
	return &pair, nil
}
