package report

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics/prometheus/promtest"
	"github.com/tailorhq/tailor/test/builder"
)

// `tailor report --prometheus-url` reaches a secured Prometheus with the
// client flags: TLS under a CA of its own, a bearer token or basic auth,
// and a tenant header.
func TestReportSecuredPrometheus(t *testing.T) {
	token := promtest.WriteFile(t, "token", "s3cret\n")
	password := promtest.WriteFile(t, "password", "hunter2")
	tenant := func(r *http.Request) error {
		if got := r.Header.Get("X-Scope-OrgID"); got != "team-a" {
			return fmt.Errorf("X-Scope-OrgID %q, want team-a", got)
		}
		return nil
	}
	cases := map[string]struct {
		args  []string
		check func(r *http.Request) error
	}{
		"bearer token and a header": {
			args: []string{"--prometheus-bearer-token-file", token, "--prometheus-header", "X-Scope-OrgID=team-a"},
			check: func(r *http.Request) error {
				if got := r.Header.Get("Authorization"); got != "Bearer s3cret" {
					return fmt.Errorf("Authorization %q, want the bearer token", got)
				}
				return tenant(r)
			},
		},
		"basic auth and a header": {
			args: []string{"--prometheus-basic-auth-username", "tailor", "--prometheus-basic-auth-password-file", password, "--prometheus-header=X-Scope-OrgID=team-a"},
			check: func(r *http.Request) error {
				if u, p, ok := r.BasicAuth(); !ok || u != "tailor" || p != "hunter2" {
					return fmt.Errorf("basic auth %q %q %v, want tailor hunter2", u, p, ok)
				}
				return tenant(r)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prom := promtest.New(t, &tls.Config{}, tc.check)
			scheme, err := manager.Scheme()
			if err != nil {
				t.Fatal(err)
			}
			pod := builder.Pod("web").Namespace("shop").Container(builder.Container("app")).Running().Obj()
			var out bytes.Buffer
			o := &ReportOptions{
				configFlags: genericclioptions.NewConfigFlags(false),
				streams:     genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: io.Discard},
				now:         func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) },
				clients:     &kube.Clients{Namespace: "shop"},
				client:      fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod).Build(),
			}
			cmd := o.command()
			cmd.SetArgs(append([]string{"--prometheus-url", prom.URL, "--prometheus-ca-file", prom.CAFile, "-o", "csv"}, tc.args...))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("report: %v", err)
			}
			// CPU and memory history and throttling, each once.
			if prom.Served.Load() != 3 || prom.Refused.Load() != 0 {
				t.Errorf("Prometheus served %d queries and refused %d, want 3 served", prom.Served.Load(), prom.Refused.Load())
			}
			if !strings.Contains(out.String(), "shop,Pod,web,app,") {
				t.Errorf("the report lacks pod web:\n%s", out.String())
			}
		})
	}
}
