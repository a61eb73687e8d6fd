package agent

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// EndpointManagers follows the EndpointSlices of the managers' Service: an
// informer on one namespace and one service's slices, so the agent needs
// only list and watch on EndpointSlices there.
type EndpointManagers struct {
	lister   discoverylisters.EndpointSliceLister
	selector labels.Selector
	port     string
	what     string
}

// WatchManagers starts following service's endpoints in namespace. It
// does not wait for the first list: the agent samples whether or not the
// API server answers, and pushes once it knows where to. port names the
// Service's port for reports.
func WatchManagers(ctx context.Context, cs kubernetes.Interface, namespace, service, port string) *EndpointManagers {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service})
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	inf := f.Discovery().V1().EndpointSlices()
	m := &EndpointManagers{lister: inf.Lister(), selector: sel, port: port, what: fmt.Sprintf("%s/%s port %s", namespace, service, port)}
	_ = inf.Informer()
	f.Start(ctx.Done())
	return m
}

// String names the Service followed, for logs.
func (m *EndpointManagers) String() string { return m.what }

// URLs lists every ready manager endpoint, https: the agent checks the
// certificate against the managers' CA for the Service's name.
func (m *EndpointManagers) URLs() []string {
	eps, err := m.lister.List(m.selector)
	if err != nil {
		return nil
	}
	return endpointURLs(eps, m.port)
}

func endpointURLs(eps []*discoveryv1.EndpointSlice, port string) []string {
	var out []string
	for _, s := range eps {
		var p *int32
		for _, sp := range s.Ports {
			if sp.Name != nil && *sp.Name == port && sp.Port != nil {
				p = sp.Port
			}
		}
		if p == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				out = append(out, "https://"+net.JoinHostPort(a, strconv.Itoa(int(*p))))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
