package nsrules

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
	"github.com/tailorhq/tailor/internal/propertytest"
)

// TestProperties draws namespaces and pods and checks what must hold of any:
// Admitted changes nothing the second time and never its argument; every
// container Clamp has brought into its Bounds passes the LimitRanges, and
// Clamp changes nothing the second time; a pod fits every quota exactly when
// its usage fits Room.
func TestProperties(t *testing.T) {
	cases := 10000
	if propertytest.Race {
		cases = 2000
	}
	g := nsrulestest.Gen{R: rand.New(rand.NewPCG(7, 11)), PriorityClasses: []string{"high", "low"}, SharedDefaults: true}
	var clamped, contradictory, refused, limitRangeRefused, exceeded int
	for i := range cases {
		rules := Rules{LimitRanges: g.LimitRanges(), Quotas: g.Quotas()}
		pod := g.Pod("p")
		before := pod.DeepCopy()
		admitted := rules.Admitted(pod)
		if diff := cmp.Diff(before, pod, equateQuantities); diff != "" {
			t.Fatalf("case %d: Admitted changed its argument (-before,+after):\n%s", i, diff)
		}
		if diff := cmp.Diff(admitted, rules.Admitted(admitted), equateQuantities); diff != "" {
			t.Fatalf("case %d: Admitted is not idempotent (-once,+twice):\n%s", i, diff)
		}
		if len(rules.Violations(admitted, nil)) > 0 {
			refused++
		}
		// The LimitRanger's verdict agrees with the rules stated apart
		// from the engine (nsrulestest.Reference), both ways.
		engine := Rules{LimitRanges: rules.LimitRanges}.LimitRangerViolations(admitted, nil)
		reference := nsrulestest.NewReference(rules.LimitRanges, nil).Refusals(admitted, nil)
		if (len(engine) > 0) != (len(reference) > 0) {
			t.Fatalf("case %d: the engine refuses for %v, the reference for %q\nlimit ranges: %+v\npod: %+v", i, engine, reference, rules.LimitRanges, admitted.Spec)
		}
		if len(reference) > 0 {
			limitRangeRefused++
		}

		// Clamp every container's cpu and memory.
		fixed := admitted.DeepCopy()
		feasible := true
		for _, res := range resources {
			b := rules.ContainerBounds(res)
			if b.Min != nil && b.Max != nil && b.Min.Quantity.Cmp(b.Max.Quantity) > 0 {
				feasible = false
				continue
			}
			for _, cs := range [][]corev1.Container{fixed.Spec.Containers, fixed.Spec.InitContainers} {
				for j := range cs {
					c := &cs[j]
					var limit *resource.Quantity
					if l, ok := c.Resources.Limits[res]; ok {
						limit = &l
					}
					req, lim, _ := b.Clamp(c.Resources.Requests[res], limit)
					req2, lim2, why2 := b.Clamp(req, lim)
					if why2 != "" || req2.Cmp(req) != 0 || !sameLimit(lim, lim2) {
						t.Fatalf("case %d: Clamp is not idempotent for %s %s: %s %v, then %s %v (%s)", i, c.Name, res, req.String(), lim, req2.String(), lim2, why2)
					}
					if c.Resources.Requests == nil {
						c.Resources.Requests = corev1.ResourceList{}
					}
					c.Resources.Requests[res] = req
					if lim != nil {
						if c.Resources.Limits == nil {
							c.Resources.Limits = corev1.ResourceList{}
						}
						c.Resources.Limits[res] = *lim
					} else {
						delete(c.Resources.Limits, res)
					}
				}
			}
		}
		if !feasible {
			contradictory++
		} else {
			clamped++
			for _, v := range rules.Violations(fixed, nil) {
				if v.Container != "" {
					t.Fatalf("case %d: a clamped container is refused: %+v\nrules: %+v\npod: %+v", i, v, rules.LimitRanges, fixed.Spec)
				}
			}
		}

		// Room and the quotas' verdict agree.
		quotasOnly := Rules{Quotas: rules.Quotas}
		var other, over bool
		for _, v := range quotasOnly.Violations(admitted, nil) {
			if strings.HasPrefix(v.Message, "exceeded quota") {
				over = true
			} else {
				other = true
			}
		}
		if other {
			continue
		}
		fits := true
		usage := podUsage(admitted)
		for key, c := range quotasOnly.Room(admitted).Quota {
			if u, ok := usage[key]; ok && u.Cmp(c.Quantity) > 0 {
				fits = false
			}
		}
		if fits == over {
			t.Fatalf("case %d: fits Room = %t but exceeds a quota = %t\nquotas: %+v\npod usage: %v", i, fits, over, rules.Quotas, usage)
		}
		if over {
			exceeded++
		}
	}
	if limitRangeRefused == 0 || limitRangeRefused == cases {
		t.Fatalf("%d of %d cases refused by a LimitRange: the generator no longer draws both sides", limitRangeRefused, cases)
	}
	t.Logf("%d cases: %d refused as drawn (%d by a LimitRange); %d clamped (none refused after), %d with contradicting LimitRanges; %d exceeding a quota, each also over Room",
		cases, refused, limitRangeRefused, clamped, contradictory, exceeded)
}
