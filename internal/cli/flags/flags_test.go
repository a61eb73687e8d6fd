package flags

import (
	"testing"
)

func TestValidatePrometheusURL(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:9090", "https://prometheus.monitoring.svc:9090/prom"} {
		if err := ValidatePrometheusURL("--prometheus-url", ok); err != nil {
			t.Errorf("ValidatePrometheusURL(%q) = %v", ok, err)
		}
	}
}
