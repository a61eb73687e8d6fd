package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// DefaultPort is the kubelet's port when its Node does not say
// (status.daemonEndpoints.kubeletEndpoint.port).
const DefaultPort = 10250

// DefaultAddressTypes is the order in which a Node's addresses are tried:
// what kubeadm sets for its apiserver's --kubelet-preferred-address-types
// and metrics-server's manifests set for theirs. An IP needs no DNS from the
// manager's pod, and an internal one stays on the cluster's network.
var DefaultAddressTypes = []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName}

// addressTypes are the types a Node's address may have.
var addressTypes = []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeExternalDNS}

// ParseAddressTypes reads a list of address types, e.g. the value of
// --kubelet-preferred-address-types; it refuses a type a Node cannot have.
func ParseAddressTypes(names []string) ([]corev1.NodeAddressType, error) {
	if len(names) == 0 {
		return nil, errors.New("no address type: list at least one of Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS")
	}
	out := make([]corev1.NodeAddressType, 0, len(names))
	for _, n := range names {
		t := corev1.NodeAddressType(n)
		if !slices.Contains(addressTypes, t) {
			return nil, fmt.Errorf("unknown address type %q: use Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS", n)
		}
		out = append(out, t)
	}
	return out, nil
}

// NodeGetter returns a node by name: the manager's cache, which watches
// the nodes anyway, so that a read costs no request to the apiserver.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// DirectOptions say how Direct reaches and verifies the kubelets.
type DirectOptions struct {
	// CAFile holds the CA bundle the kubelets' serving certificates are
	// verified against; "" is the CA the rest.Config verifies the
	// apiserver with (in a pod, the cluster CA of its service account),
	// which signs the kubelets' certificates when they are bootstrapped
	// (serverTLSBootstrap) and approved.
	CAFile string
	// InsecureSkipVerify does not verify the kubelets' serving
	// certificates: the manager's credentials then go to whatever answers
	// at a Node's address. Only for clusters whose kubelets serve
	// self-signed certificates (kubeadm's default) until they are
	// bootstrapped.
	InsecureSkipVerify bool
	// AddressTypes is the order in which a Node's addresses are tried;
	// nil is DefaultAddressTypes.
	AddressTypes []corev1.NodeAddressType
}

// Direct opens the pages on each kubelet's own port, as metrics-server
// reads them, authenticated as the rest.Config's identity (its bearer
// token or client certificate). The kubelet authorizes /metrics/* as get
// on nodes/metrics, which reaches nothing else of the kubelet.
type Direct struct {
	client *http.Client
	nodes  NodeGetter
	types  []corev1.NodeAddressType
	// verify says what the serving certificates are checked against, for
	// the error a failed check gives.
	verify string
}

var _ Pages = (*Direct)(nil)

// NewDirect returns a Direct that authenticates as cfg does, finds each
// node's address with nodes, and verifies the kubelets as o says. A CA file
// that cannot be read fails here, not at the first read.
func NewDirect(cfg *rest.Config, nodes NodeGetter, o DirectOptions) (*Direct, error) {
	if o.CAFile != "" && o.InsecureSkipVerify {
		return nil, errors.New("a kubelet CA file and skipping the kubelets' certificate check exclude each other")
	}
	if o.AddressTypes == nil {
		o.AddressTypes = DefaultAddressTypes
	}
	kc := rest.CopyConfig(cfg)
	tc := &kc.TLSClientConfig
	// The server name and the check's switch are the apiserver's: a
	// kubeconfig that skips the apiserver's check does not skip the
	// kubelets'.
	tc.ServerName, tc.Insecure = "", false
	d := &Direct{nodes: nodes, types: o.AddressTypes, verify: "the CA the manager verifies the apiserver with"}
	switch {
	case o.InsecureSkipVerify:
		tc.Insecure, tc.CAFile, tc.CAData = true, "", nil
		d.verify = "nothing (--kubelet-insecure-tls)"
	case o.CAFile != "":
		tc.CAFile, tc.CAData = o.CAFile, nil
		d.verify = o.CAFile
	}
	rt, err := rest.TransportFor(kc)
	if err != nil {
		return nil, fmt.Errorf("the kubelets' client: %w", err)
	}
	d.client = &http.Client{
		Transport: rt,
		// A kubelet does not redirect; following one would send the
		// manager's credentials where the Node does not point.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d, nil
}

func (d *Direct) Open(ctx context.Context, node, path string) (io.ReadCloser, error) {
	n, err := d.nodes(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("read %s of node %s: %w", path, node, err)
	}
	host, err := address(n, d.types)
	if err != nil {
		return nil, fmt.Errorf("read %s of node %s: %w", path, node, err)
	}
	u := (&url.URL{Scheme: "https", Host: host, Path: "/" + path}).String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s of node %s: %w", path, node, err)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		// The URL is said once, here.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("read %s of node %s at %s: %w", path, node, u, d.explain(err))
	}
	if resp.StatusCode != http.StatusOK {
		defer func() { _ = resp.Body.Close() }()
		// Enough of the answer to name who was refused what.
		said, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("read %s of node %s at %s: the kubelet answered %s: %s%s", path, node, u, resp.Status,
			strings.TrimSpace(string(said)), statusHint(resp.StatusCode))
	}
	return resp.Body, nil
}

// explain adds to a failed check of a kubelet's serving certificate what
// to do about it.
func (d *Direct) explain(err error) error {
	var hostname x509.HostnameError
	if errors.As(err, &hostname) {
		return fmt.Errorf("the kubelet's serving certificate does not name the address it was reached at (%w): list an address type it names first in --kubelet-preferred-address-types, "+
			"or have the kubelets' certificates name their addresses (serverTLSBootstrap: true in the KubeletConfiguration)", err)
	}
	var verification *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &verification) || errors.As(err, &unknown) || errors.As(err, &invalid) {
		return fmt.Errorf("the kubelet's serving certificate does not verify against %s (%w): give the CA that signs the kubelets' serving certificates with --kubelet-ca-file, "+
			"or have them signed by the cluster CA (serverTLSBootstrap: true in the KubeletConfiguration, and their CSRs approved); "+
			"--kubelet-insecure-tls skips the check, sending the manager's credentials to whatever answers at the node's address", d.verify, err)
	}
	return err
}

// statusHint says what a refusal of the manager's read means.
func statusHint(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return " (the kubelet does not accept the manager's credentials: a token needs its authentication.webhook enabled, a client certificate a CA in its authentication.x509.clientCAFile)"
	case http.StatusForbidden:
		return " (the manager's identity needs get on nodes/metrics, as which the kubelet authorizes /metrics/*)"
	}
	return ""
}

// address is where node's kubelet listens: the first address of the first
// type in types that the Node has, and its status.daemonEndpoints port
// (DefaultPort when it gives none).
func address(n *corev1.Node, types []corev1.NodeAddressType) (string, error) {
	port := int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultPort
	}
	for _, t := range types {
		for _, a := range n.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return net.JoinHostPort(a.Address, strconv.Itoa(port)), nil
			}
		}
	}
	has := make([]string, 0, len(n.Status.Addresses))
	for _, a := range n.Status.Addresses {
		has = append(has, string(a.Type))
	}
	want := make([]string, len(types))
	for i, t := range types {
		want[i] = string(t)
	}
	return "", fmt.Errorf("the node has no address of the types %s (it has %q): list one of its types in --kubelet-preferred-address-types",
		strings.Join(want, ", "), has)
}
