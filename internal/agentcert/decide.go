package agentcert

import (
	"crypto/x509"
	"fmt"
	"slices"
	"time"
)

// CAOverlap is how long a new CA is published beside the old before it
// signs the certificate the managers serve: time for every agent to see
// the new bundle (they watch it, so seconds; an agent cut off from the
// apiserver for a while too). The old serving certificate stays valid
// meanwhile: a CA is replaced years before it expires.
const CAOverlap = 24 * time.Hour

// RenewAt is when c is renewed: once two thirds of its life have passed,
// so a third of it is left for a renewal that failed to be tried again.
func RenewAt(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(life - life/3)
}

// Due says whether c is to be renewed at now.
func Due(c *x509.Certificate, now time.Time) bool {
	return !now.Before(RenewAt(c))
}

// Action is what Decide asks for.
type Action string

const (
	// Keep: nothing to do until Decision.Next.
	Keep Action = "Keep"
	// Create: there is no Secret: make a CA and a serving certificate.
	Create Action = "Create"
	// Replace: the Secret is unusable (unreadable, its CA expired): make
	// a new CA and certificate in its place.
	Replace Action = "Replace"
	// RotateCA: the signing CA is due: make a new one and publish it
	// beside the old, which keeps vouching for the certificate served
	// until the new CA has been published for CAOverlap.
	RotateCA Action = "RotateCA"
	// Reissue: sign a new serving certificate with the signing CA.
	Reissue Action = "Reissue"
	// Prune: drop expired CAs from the bundle.
	Prune Action = "Prune"
)

// Input is everything a decision needs: the time, the names the
// certificate must carry, and the Secret as found.
type Input struct {
	Now      time.Time
	DNSNames []string
	// Found says the Secret exists; Bundle is its content, nil when it
	// could not be read (ParseErr says why).
	Found    bool
	Bundle   *Bundle
	ParseErr error
}

// Decision is one action, why, and when to decide again if nothing else
// changes (Keep only).
type Decision struct {
	Action Action
	Reason string
	Next   time.Time
}

// Decide says what to do with the managers' own Secret. One action at a
// time: after any but Keep, the caller writes the result and decides
// again on it.
func Decide(in Input) Decision {
	now := in.Now
	switch {
	case !in.Found:
		return Decision{Action: Create, Reason: "no Secret yet"}
	case in.Bundle == nil:
		return Decision{Action: Replace, Reason: fmt.Sprintf("the Secret cannot be read: %v", in.ParseErr)}
	}
	b := in.Bundle
	if !now.Before(b.Signing.NotAfter) {
		return Decision{Action: Replace, Reason: fmt.Sprintf("the CA expired at %s", b.Signing.NotAfter.Format(time.RFC3339))}
	}
	if Due(b.Signing, now) {
		return Decision{Action: RotateCA, Reason: fmt.Sprintf("the CA expires at %s", b.Signing.NotAfter.Format(time.RFC3339))}
	}
	issuer := issuerOf(b.Cert, b.CAs)
	handOver := b.Signing.NotBefore.Add(Backdate + CAOverlap)
	switch {
	case issuer == nil:
		return Decision{Action: Reissue, Reason: "the certificate was signed by none of the CAs"}
	case !sameNames(b.Cert.DNSNames, in.DNSNames):
		return Decision{Action: Reissue, Reason: fmt.Sprintf("the certificate is for %v, the Service's names are %v", b.Cert.DNSNames, in.DNSNames)}
	case now.Before(b.Cert.NotBefore) || !now.Before(b.Cert.NotAfter):
		return Decision{Action: Reissue, Reason: fmt.Sprintf("the certificate is valid from %s to %s only", b.Cert.NotBefore.Format(time.RFC3339), b.Cert.NotAfter.Format(time.RFC3339))}
	case Due(b.Cert, now):
		return Decision{Action: Reissue, Reason: fmt.Sprintf("the certificate expires at %s", b.Cert.NotAfter.Format(time.RFC3339))}
	case issuer != b.Signing && !now.Before(handOver):
		return Decision{Action: Reissue, Reason: "the new CA has been published long enough to sign the certificate"}
	}
	next := []time.Time{RenewAt(b.Signing), RenewAt(b.Cert)}
	if issuer != b.Signing {
		next = append(next, handOver)
	}
	for _, ca := range b.CAs[1:] {
		if !now.Before(ca.NotAfter) {
			return Decision{Action: Prune, Reason: fmt.Sprintf("a replaced CA expired at %s", ca.NotAfter.Format(time.RFC3339))}
		}
		next = append(next, ca.NotAfter)
	}
	return Decision{Action: Keep, Next: slices.MinFunc(next, time.Time.Compare)}
}

// issuerOf is the CA of cas that signed c, or nil.
func issuerOf(c *x509.Certificate, cas []*x509.Certificate) *x509.Certificate {
	for _, ca := range cas {
		if c.CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	return nil
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Apply carries out d at now on b (nil for Create and Replace) and returns
// the Secret's new content. It decides nothing: every choice was d's.
func Apply(d Decision, b *Bundle, now time.Time, dnsNames []string) (*Bundle, error) {
	out := &Bundle{}
	if b != nil {
		*out = *b
		out.CAs = slices.Clone(b.CAs)
	}
	switch d.Action {
	case Create, Replace:
		key, err := NewKey()
		if err != nil {
			return nil, err
		}
		ca, err := NewCA(now, key)
		if err != nil {
			return nil, err
		}
		out = &Bundle{CAs: []*x509.Certificate{ca}, Signing: ca, CAKey: key}
		if err := out.issue(now, dnsNames); err != nil {
			return nil, err
		}
	case RotateCA:
		key, err := NewKey()
		if err != nil {
			return nil, err
		}
		ca, err := NewCA(now, key)
		if err != nil {
			return nil, err
		}
		// The old CA stays in the bundle, vouching for the certificate
		// served now; its key is no longer needed.
		out.CAs = append([]*x509.Certificate{ca}, live(b.CAs, now)...)
		out.Signing, out.CAKey = ca, key
	case Reissue:
		if err := out.issue(now, dnsNames); err != nil {
			return nil, err
		}
		out.CAs = append(out.CAs[:1], live(out.CAs[1:], now)...)
	case Prune:
		out.CAs = append(out.CAs[:1], live(out.CAs[1:], now)...)
	default:
		return nil, fmt.Errorf("nothing to apply for %s", d.Action)
	}
	return out, nil
}

// issue signs a new serving certificate, with a new key, by b's signing CA.
func (b *Bundle) issue(now time.Time, dnsNames []string) error {
	key, err := NewKey()
	if err != nil {
		return err
	}
	c, err := NewServingCert(now, b.Signing, b.CAKey, dnsNames, key)
	if err != nil {
		return err
	}
	b.Cert, b.Key = c, key
	return nil
}

// live are the CAs of cas that have not expired at now.
func live(cas []*x509.Certificate, now time.Time) []*x509.Certificate {
	var out []*x509.Certificate
	for _, ca := range cas {
		if now.Before(ca.NotAfter) {
			out = append(out, ca)
		}
	}
	return out
}
