package manager

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/config"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/test/builder"
)

// The manager's Prometheus source reaches a secured Prometheus (TLS under
// a CA of its own, a bearer token, a tenant header) as its client config
// says, on every query it sends.
func TestPrometheusSourceSecured(t *testing.T) {
	var served, refused atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" || r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Scope-OrgID") != "team-a" {
			refused.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(token, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(nil, Options{
		MetricsSource: "prometheus",
		PrometheusURL: srv.URL,
		PrometheusClient: &config.HTTPClientConfig{
			BearerTokenFile: token,
			TLSConfig:       config.TLSConfig{CAFile: ca},
			HTTPHeaders:     &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"team-a"}}}},
		},
	})
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	pod := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
	if _, err := src.Usage(context.Background(), []*corev1.Pod{pod}); err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if served.Load() == 0 || refused.Load() != 0 {
		t.Errorf("Prometheus served %d queries and refused %d: want every query served", served.Load(), refused.Load())
	}
}
