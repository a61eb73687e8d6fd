package clitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"
)

// APIServer answers /version as a v1.37.1 apiserver after delay, and
// counts the calls: a verb that must not ask it, or must give up on it,
// is held to that.
func APIServer(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.1"})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}
