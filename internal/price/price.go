package price

import (
	"github.com/tailorhq/tailor/internal/amount"

	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HoursPerMonth is an average month: 365 days of 24 hours over 12.
const HoursPerMonth = 365 * 24 / 12.0

// Prices are what a CPU core and a GiB (2^30 bytes) of memory cost an
// hour, in any one currency.
type Prices struct {
	CPUCoreHour   float64 `json:"cpuCoreHour"`
	MemoryGiBHour float64 `json:"memoryGiBHour"`
}

// Example are the prices used when none are given: round figures that show
// what the money columns mean, not any provider's or anyone's real price.
var Example = Prices{CPUCoreHour: 0.04, MemoryGiBHour: 0.005}

// Monthly is what l's cpu and memory cost a month at p. Other resources
// cost nothing here.
func (p Prices) Monthly(l corev1.ResourceList) float64 {
	perHour := amount.In(l, corev1.ResourceCPU)*p.CPUCoreHour + amount.In(l, corev1.ResourceMemory)/(1<<30)*p.MemoryGiBHour
	return perHour * HoursPerMonth
}

// Validate says what is wrong with p, for a flag's message.
func (p Prices) Validate() error {
	var errs []error
	for _, v := range []struct {
		name string
		v    float64
	}{{"cpu core-hour", p.CPUCoreHour}, {"memory GiB-hour", p.MemoryGiBHour}} {
		if v.v < 0 || math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			errs = append(errs, fmt.Errorf("the %s price %v is not a price: give zero or more", v.name, v.v))
		}
	}
	return errors.Join(errs...)
}

// The keys a node's annotations (or, failing them, its labels) price it
// by, each a decimal number in the currency of the cluster's prices:
// annotate or label each node pool's nodes with what its node type costs.
const (
	CPUKey    = "prices.tailor.dev/cpu-core-hour"
	MemoryKey = "prices.tailor.dev/memory-gib-hour"
)

// Book is the cluster's prices: Default, and each node's own where it
// carries them.
type Book struct {
	Default Prices `json:"default"`
	// Example is true when Default is Example: no price was given.
	Example bool `json:"example"`
	// Nodes are the nodes priced otherwise than Default, by name.
	Nodes map[string]Prices `json:"nodes,omitempty"`
}

// For is the prices of the named node, Default for a node without its own
// (or "", a pod not on one).
func (b Book) For(node string) Prices {
	if p, ok := b.Nodes[node]; ok {
		return p
	}
	return b.Default
}

// NewBook prices nodes (their metadata is enough): each node's CPUKey and
// MemoryKey (an annotation, else a label) override def for that node and
// resource. A value that is not a price is an error that names the node,
// and leaves def in place.
func NewBook(def Prices, example bool, nodes []metav1.ObjectMeta) (Book, error) {
	b := Book{Default: def, Example: example}
	var errs []error
	for i := range nodes {
		n := &nodes[i]
		p, own := def, false
		for _, k := range []struct {
			key string
			dst *float64
		}{{CPUKey, &p.CPUCoreHour}, {MemoryKey, &p.MemoryGiBHour}} {
			s, ok := n.Annotations[k.key]
			if !ok {
				s, ok = n.Labels[k.key]
			}
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				errs = append(errs, fmt.Errorf("node %s: %s %q is not a price: write a decimal number such as 0.031", n.Name, k.key, s))
				continue
			}
			*k.dst, own = v, true
		}
		if own && p != def {
			if b.Nodes == nil {
				b.Nodes = map[string]Prices{}
			}
			b.Nodes[n.Name] = p
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return b, errors.Join(errs...)
}
