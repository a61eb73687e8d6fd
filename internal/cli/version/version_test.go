package version

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// fakeAPIServer answers /version as an apiserver does and counts the calls.
func fakeAPIServer(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int32) {
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

// An apiserver that does not answer holds `tailor version` no longer than
// its timeout.
func TestVersionServerTimeout(t *testing.T) {
	srv, _ := fakeAPIServer(t, time.Minute)
	flags := genericclioptions.NewConfigFlags(false)
	flags.APIServer = &srv.URL
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := &VersionOptions{configFlags: flags, streams: streams, ServerTimeout: 200 * time.Millisecond}
	start := time.Now()
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s with a 200ms timeout", d)
	}
	if !strings.Contains(errOut.String(), "server version not read") || !strings.Contains(out.String(), "Version:") {
		t.Errorf("stdout %q, stderr %q: want the client's version and a warning", out.String(), errOut.String())
	}
}
