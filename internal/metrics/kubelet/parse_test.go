package kubelet

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// cadvisorLikePage is a /metrics/cadvisor page of pods of one container as
// the kubelet writes it: for each of the container, the sandbox and the pod
// cgroup, one series of each of 70 families (cAdvisor's own collector,
// with the kubelet's metric set, writes 75 series per cgroup, 74 KB a pod),
// labelled as the kubelet labels them. Two of the families are the CFS
// counters the throttling read keeps.
func cadvisorLikePage(pods int) []byte {
	families := []string{cfsPeriods, throttledPeriod}
	for i := len(families); i < 70; i++ {
		families = append(families, fmt.Sprintf("container_other_metric_%02d_total", i))
	}
	var b bytes.Buffer
	for _, f := range families {
		fmt.Fprintf(&b, "# HELP %s Some cAdvisor figure.\n# TYPE %s counter\n", f, f)
		for p := range pods {
			uid := fmt.Sprintf("6f1c2a9e-%04x-4d2b-9c1e-%012x", p, p)
			for _, c := range []struct{ container, id, image string }{
				{"", "", ""},
				{"", "/3f4bbd6e7000d572da68f81503afec514d9a80a28b1d10c5ee9cb3bbd06c" + fmt.Sprintf("%04x", p), "registry.k8s.io/pause:3.10"},
				{"app", "/9ea1e80647e469919fa0dfa88920f06d4fa6c16e27d2a08a7a690739a045" + fmt.Sprintf("%04x", p), "registry.example.com/payments/checkout-api:v1.42.0"},
			} {
				name := ""
				if c.id != "" {
					name = "a0fdb1bdcae88cdf340139ab9a6da8a1236c5b7c16029bf75d4ea1e01e8a" + fmt.Sprintf("%04x", p)
				}
				fmt.Fprintf(&b, "%s{container=%q,id=\"/kubepods/burstable/pod%s%s\",image=%q,name=%q,namespace=\"team-payments\",pod=\"checkout-api-7d9f8b6c5d-%05d\"} %d 1795836458917\n",
					f, c.container, uid, c.id, c.image, name, p, 1000+p)
			}
		}
	}
	return b.Bytes()
}

// The families kept are parsed as they would be from the whole page.
func TestParseKeepsOnlyTheNamedFamilies(t *testing.T) {
	page := cadvisorLikePage(3)
	got, err := parse(bytes.NewReader(page), nil, throttledPeriod, cfsPeriods)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[throttledPeriod]) != 3 || len(got[cfsPeriods]) != 3 {
		t.Errorf("kept %v, want the app container of each of 3 pods in each of the 2 families", got)
	}
}

// BenchmarkParseCadvisorPage is the throttling read's parse of one node's
// /metrics/cadvisor page at the kubelet's default of 110 pods (about
// 8 MB): the whole page parsed, as the source did before, and only the two
// families it keeps (parse). Printed, not checked.
func BenchmarkParseCadvisorPage(b *testing.B) {
	page := cadvisorLikePage(110)
	b.Run("whole page", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(page)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept families", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parse(bytes.NewReader(page), nil, throttledPeriod, cfsPeriods); err != nil {
				b.Fatal(err)
			}
		}
	})
}
