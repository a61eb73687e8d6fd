package price

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMonthly(t *testing.T) {
	p := Prices{CPUCoreHour: 0.04, MemoryGiBHour: 0.005}
	cases := map[string]struct {
		list corev1.ResourceList
		want float64
	}{
		"one core and one GiB, a 730-hour month": {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}, 730 * 0.045},
		"millicores and MiB":                     {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}, 730 * (0.25*0.04 + 0.5*0.005)},
		"decimal memory is bytes, not GiB":       {corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1G")}, 730 * 0.005 * 1e9 / (1 << 30)},
		"cpu only":                               {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, 730 * 0.08},
		"nothing requested costs nothing":        {nil, 0},
		"other resources are not priced":         {corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"), "nvidia.com/gpu": resource.MustParse("1")}, 0},
	}
	for name, tc := range cases {
		if got := p.Monthly(tc.list); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	if got := (Prices{}).Monthly(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}); got != 0 {
		t.Errorf("free: %v", got)
	}
}

func TestNewBook(t *testing.T) {
	def := Prices{CPUCoreHour: 0.04, MemoryGiBHour: 0.005}
	nodes := []metav1.ObjectMeta{
		{Name: "plain"},
		{Name: "arm", Annotations: map[string]string{CPUKey: "0.031", MemoryKey: "0.0042"}},
		// A label where the node pool sets labels only; the annotation wins.
		{Name: "spot", Labels: map[string]string{CPUKey: "0.012"}},
		{Name: "both", Labels: map[string]string{CPUKey: "9"}, Annotations: map[string]string{CPUKey: "0.05"}},
		{Name: "bad", Annotations: map[string]string{CPUKey: "three cents", MemoryKey: "-1"}},
		{Name: "same", Annotations: map[string]string{CPUKey: "0.04"}},
	}
	b, err := NewBook(def, false, nodes)
	want := map[string]Prices{
		"arm":  {0.031, 0.0042},
		"spot": {0.012, 0.005},
		"both": {0.05, 0.005},
	}
	if diff := cmp.Diff(want, b.Nodes); diff != "" {
		t.Errorf("nodes (-want,+got):\n%s", diff)
	}
	if err == nil || !strings.Contains(err.Error(), `node bad: prices.tailor.dev/cpu-core-hour "three cents" is not a price`) ||
		!strings.Contains(err.Error(), `node bad: prices.tailor.dev/memory-gib-hour "-1" is not a price`) {
		t.Errorf("error %v, want both of node bad's values named", err)
	}
	if b.For("bad") != def || b.For("plain") != def || b.For("") != def || b.For("arm") != want["arm"] {
		t.Errorf("For: bad %v plain %v unscheduled %v arm %v", b.For("bad"), b.For("plain"), b.For(""), b.For("arm"))
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []Prices{{-1, 0}, {0, math.NaN()}, {math.Inf(1), 0}} {
		if p.Validate() == nil {
			t.Errorf("%v: no error", p)
		}
	}
	if err := (Prices{0, 0}).Validate(); err != nil {
		t.Errorf("free: %v", err)
	}
}
