package agentcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
)

// The managers' grants for the agents' TLS, in their own namespace only:
// get and update on the Secret and the ConfigMap by name, and create,
// which RBAC cannot narrow to a name (the name of an object being created
// is not known when the request is authorized). Nothing is listed or
// watched: Keeper reads the two objects by name. make generate writes
// these into config/components/agent (the agent's component: an install
// without the agent has none of them); the Helm chart renders the same
// (test/deploy compares them), with the names of its values.
//
// +kubebuilder:rbac:groups="",namespace=tailor-system,roleName=tailor-manager-agent-tls,resources=secrets,resourceNames=tailor-agent-tls,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=tailor-system,roleName=tailor-manager-agent-tls,resources=configmaps,resourceNames=tailor-agent-ca,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=tailor-system,roleName=tailor-manager-agent-tls,resources=secrets;configmaps,verbs=create

// DefaultResync is how often Keeper reads the Secret when nothing is due:
// how soon a replica serves what another wrote (a reissued certificate,
// a replaced Secret), or what cert-manager renewed.
const DefaultResync = time.Minute

// Keeper keeps the certificate the managers serve the agents' reports
// with, in Secret Secret of Namespace, and publishes its CA bundle in
// ConfigMap ConfigMap there. Every replica runs one: they converge on the
// Secret, whoever wrote it (a Create that finds one already there reads
// it back; an Update on a stale copy conflicts and is decided again), so
// all serve the same certificate within a Resync of each other. A replica
// serves a certificate only once the ConfigMap holds the bundle it chains
// to.
type Keeper struct {
	Client kubernetes.Interface
	// Namespace holds the Secret, the ConfigMap and the Service.
	Namespace string
	Secret    string
	ConfigMap string
	// DNSNames are the Service's names the certificate is made for;
	// ServerName is the one the agents check (report.ServerName).
	DNSNames   []string
	ServerName string
	// Provided: the Secret is the operator's (cert-manager's, say: tls.crt,
	// tls.key and ca.crt): it is only read, checked and its ca.crt
	// published, never written.
	Provided bool
	Clock    clock.Clock
	Log      logr.Logger
	// Resync is DefaultResync when 0.
	Resync time.Duration

	cert atomic.Pointer[tls.Certificate]
}

// GetCertificate serves the certificate loaded last (tls.Config's hook,
// asked at each handshake, so a new certificate needs no restart).
func (k *Keeper) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := k.cert.Load()
	if c == nil {
		return nil, fmt.Errorf("no certificate for the agents' reports yet (Secret %s/%s)", k.Namespace, k.Secret)
	}
	return c, nil
}

// Ready fails until a certificate is loaded: a replica joins the report
// Service's endpoints only once it can answer a handshake.
func (k *Keeper) Ready(*http.Request) error {
	if k.cert.Load() == nil {
		return fmt.Errorf("no certificate for the agents' reports yet (Secret %s/%s)", k.Namespace, k.Secret)
	}
	return nil
}

// Start syncs until ctx ends: at once, then when something is due, at
// least every Resync, and after a failure within 10 seconds.
func (k *Keeper) Start(ctx context.Context) error {
	for {
		next, err := k.Sync(ctx)
		switch {
		case ctx.Err() != nil:
			return nil //nolint:nilerr // stopped: a sync cut short is no failure
		case err != nil:
			k.Log.Error(err, "keeping the certificate of the agents' reports", "secret", k.Namespace+"/"+k.Secret)
			next = min(10*time.Second, k.resync())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-k.Clock.After(next):
		}
	}
}

func (k *Keeper) resync() time.Duration {
	if k.Resync > 0 {
		return k.Resync
	}
	return DefaultResync
}

// maxWrites bounds the writes of one Sync: a Create, or a Replace, and a
// race lost on each.
const maxWrites = 4

// Sync reads the Secret, writes what Decide asks for (not when Provided),
// publishes the CA bundle and loads the certificate. It returns how long
// until the next Sync is due.
func (k *Keeper) Sync(ctx context.Context) (time.Duration, error) {
	secrets := k.Client.CoreV1().Secrets(k.Namespace)
	s, err := secrets.Get(ctx, k.Secret, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, k.Secret, err)
	}
	found := err == nil
	if k.Provided && !found {
		return 0, fmt.Errorf("secret %s/%s not found: it is the operator's to provide (tls.crt, tls.key and ca.crt, e.g. a cert-manager Certificate's), or run without --agent-tls-provided and the managers make their own", k.Namespace, k.Secret)
	}
	if !k.Provided && found && s.Labels[managedByLabel] != managedBy {
		// Never overwrite a Secret the managers did not make: it may be
		// cert-manager's, named here without --agent-tls-provided.
		return 0, fmt.Errorf("secret %s/%s exists and the managers did not make it (no label %s=%s): to serve it, run with --agent-tls-provided (Helm agent.tls.provided); for the managers to make their own, delete it or name another with --agent-tls-secret",
			k.Namespace, k.Secret, managedByLabel, managedBy)
	}
	next := k.resync()
	for writes := 0; !k.Provided; writes++ {
		now := k.Clock.Now()
		in := Input{Now: now, DNSNames: k.DNSNames, Found: found}
		if found {
			in.Bundle, in.ParseErr = Parse(s.Data)
		}
		d := Decide(in)
		if d.Action == Keep {
			next = min(next, max(d.Next.Sub(now), time.Second))
			break
		}
		if writes == maxWrites {
			return 0, fmt.Errorf("secret %s/%s still needs %s after %d writes (%s): another writer?", k.Namespace, k.Secret, d.Action, writes, d.Reason)
		}
		if s, found, err = k.write(ctx, s, d, in.Bundle, now); err != nil {
			return 0, err
		}
	}
	now := k.Clock.Now()
	pair, err := Serving(s.Data, k.ServerName, now)
	if err != nil {
		return 0, fmt.Errorf("secret %s/%s: %w", k.Namespace, k.Secret, err)
	}
	if err := k.publish(ctx, s.Data[BundleKey]); err != nil {
		return 0, err
	}
	if old := k.cert.Load(); old == nil || !bytes.Equal(old.Certificate[0], pair.Certificate[0]) {
		k.cert.Store(pair)
		k.Log.Info("serving the agents' reports with a new certificate", "secret", k.Namespace+"/"+k.Secret,
			"serial", pair.Leaf.SerialNumber.Text(16), "notAfter", pair.Leaf.NotAfter, "issuer", pair.Leaf.Issuer.CommonName)
	}
	return next, nil
}

// write carries out d and returns the Secret as it now is: the one
// written, or, when another replica won the race, theirs, to decide on
// again.
func (k *Keeper) write(ctx context.Context, s *corev1.Secret, d Decision, b *Bundle, now time.Time) (*corev1.Secret, bool, error) {
	nb, err := Apply(d, b, now, k.DNSNames)
	if err != nil {
		return nil, false, err
	}
	data, err := nb.Data()
	if err != nil {
		return nil, false, err
	}
	secrets := k.Client.CoreV1().Secrets(k.Namespace)
	var out *corev1.Secret
	if d.Action == Create {
		out, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: k.Secret, Namespace: k.Namespace, Labels: labels},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}, metav1.CreateOptions{})
	} else {
		s = s.DeepCopy()
		s.Data = data
		out, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		// Another replica wrote first: take what it wrote.
		out, err = secrets.Get(ctx, k.Secret, metav1.GetOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("reading Secret %s/%s back: %w", k.Namespace, k.Secret, err)
		}
		return out, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s on Secret %s/%s (%s): %w", d.Action, k.Namespace, k.Secret, d.Reason, err)
	}
	k.Log.Info("wrote the certificate of the agents' reports", "secret", k.Namespace+"/"+k.Secret, "action", d.Action, "reason", d.Reason)
	return out, true, nil
}

// The label on the Secret and ConfigMap the managers make: they write only
// objects that carry it.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "tailor-manager"
)

var labels = map[string]string{"app.kubernetes.io/name": "tailor", "app.kubernetes.io/component": "manager", managedByLabel: managedBy}

// publish makes the ConfigMap hold bundle: the CAs only, never a key. A
// write lost to another replica is tried again on what it wrote.
func (k *Keeper) publish(ctx context.Context, bundle []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return k.publishOnce(ctx, bundle) })
}

func (k *Keeper) publishOnce(ctx context.Context, bundle []byte) error {
	cms := k.Client.CoreV1().ConfigMaps(k.Namespace)
	cm, err := cms.Get(ctx, k.ConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: k.ConfigMap, Namespace: k.Namespace, Labels: labels},
			Data:       map[string]string{BundleKey: string(bundle)},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cm, err = cms.Get(ctx, k.ConfigMap, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("publishing the agents' CA bundle in ConfigMap %s/%s: %w", k.Namespace, k.ConfigMap, err)
	}
	if cm.Data[BundleKey] == string(bundle) {
		return nil
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[BundleKey] = string(bundle)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("publishing the agents' CA bundle in ConfigMap %s/%s: %w", k.Namespace, k.ConfigMap, err)
	}
	k.Log.Info("published the agents' CA bundle", "configMap", k.Namespace+"/"+k.ConfigMap)
	return nil
}
