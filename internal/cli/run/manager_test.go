package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/price"
)

// The manager's flags are checked before anything connects: a lease timing
// client-go would reject at start, or would never let a leader renew, is a
// usage error naming the three flags.
func TestManagerFlags(t *testing.T) {
	certDir, crtOnly := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"), filepath.Join(crtOnly, "tls.crt")} {
		if err := os.WriteFile(f, []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"defaults":                  {},
		"longer lease":              {args: []string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}},
		"renew past the lease":      {args: []string{"--leader-elect-renew-deadline=20s"}, wantErr: "--leader-elect-renew-deadline (20s) < --leader-elect-lease-duration (8s)"},
		"retry past the renew":      {args: []string{"--leader-elect-retry-period=7s"}, wantErr: "0 < --leader-elect-retry-period (7s)"},
		"no retry":                  {args: []string{"--leader-elect-retry-period=0s"}, wantErr: "leader election needs"},
		"timings unused when solo":  {args: []string{"--leader-elect=false", "--leader-elect-retry-period=0s"}},
		"sync period too short":     {args: []string{"--sync-period=100ms"}, wantErr: "--sync-period must be at least 1s"},
		"unknown source":            {args: []string{"--metrics-source=statsd"}, wantErr: `unknown --metrics-source "statsd"`},
		"second of two shards":      {args: []string{"--shards=2", "--shard-index=1"}},
		"shard past the count":      {args: []string{"--shards=2", "--shard-index=2"}, wantErr: "--shards 2 --shard-index 2: shard index 2: want 0 to 1"},
		"index without shards":      {args: []string{"--shard-index=1"}, wantErr: "shard index 1: want 0 to 0"},
		"no shards":                 {args: []string{"--shards=0"}, wantErr: "--shards must be at least 1"},
		"namespaces":                {args: []string{"--namespaces=team-a,team-b"}},
		"namespaces split":          {args: []string{"--namespaces=team-a,team-b,team-c", "--shards=2", "--shard-index=1"}},
		"namespace not a name":      {args: []string{"--namespaces=team-a,Team_B"}, wantErr: `--namespaces: namespace "Team_B" is not a namespace name`},
		"namespace empty":           {args: []string{"--namespaces=team-a,,team-b"}, wantErr: `--namespaces: namespace "" is not a namespace name`},
		"namespace twice":           {args: []string{"--namespaces=team-a,team-b,team-a"}, wantErr: `--namespaces: namespace "team-a" is listed twice`},
		"agent":                     {args: []string{"--metrics-source=agent"}},
		"agent without fallback":    {args: []string{"--metrics-source=agent", "--agent-fallback=none"}},
		"agent falls back to self":  {args: []string{"--metrics-source=agent", "--agent-fallback=agent"}, wantErr: `unknown --agent-fallback "agent"`},
		"agent account unqualified": {args: []string{"--metrics-source=agent", "--agent-service-account=tailor-agent"}, wantErr: "want <namespace>:<name>"},
		"prometheus rate window":    {args: []string{"--metrics-source=prometheus", "--prometheus-rate-window=2m"}},
		"rate window under 1s":      {args: []string{"--prometheus-rate-window=500ms"}, wantErr: "--prometheus-rate-window 500ms: want a duration of at least 1s"},
		"rate window negative":      {args: []string{"--prometheus-rate-window=-1m"}, wantErr: "--prometheus-rate-window -1m0s"},
		"rate window in ns":         {args: []string{"--prometheus-rate-window=1.0000001s"}, wantErr: "in whole milliseconds"},
		"agent service unqualified": {args: []string{"--metrics-source=agent", "--agent-service=tailor-manager-agents"}, wantErr: "want <namespace>/<name> of a Service"},
		"agent service bad name":    {args: []string{"--metrics-source=agent", "--agent-service=tailor-system/Agents"}, wantErr: "want <namespace>/<name> of a Service"},
		"agent TLS Secret provided": {args: []string{"--metrics-source=agent", "--agent-tls-secret=agent-cert", "--agent-tls-provided"}},
		"agent TLS Secret bad name": {args: []string{"--metrics-source=agent", "--agent-tls-secret=Agent_Cert"}, wantErr: "--agent-tls-secret"},
		"metrics cert dir":          {args: []string{"--metrics-cert-dir=" + certDir}},
		"metrics cert dir missing":  {args: []string{"--metrics-cert-dir=" + certDir + "/nowhere"}, wantErr: "want tls.crt and tls.key there"},
		"metrics cert dir no key":   {args: []string{"--metrics-cert-dir=" + crtOnly}, wantErr: "tls.key"},
		"dashboard prices":          {args: []string{"--price-cpu-core-hour=0.031", "--price-memory-gib-hour=0.0042"}},
		"one price alone":           {args: []string{"--price-cpu-core-hour=0.031"}, wantErr: "give both --price-cpu-core-hour and --price-memory-gib-hour"},
		"a negative price":          {args: []string{"--price-cpu-core-hour=0.031", "--price-memory-gib-hour=-1"}, wantErr: "the memory GiB-hour price -1 is not a price"},
		"kubelet CA file":           {args: []string{"--kubelet-ca-file=/etc/tailor/kubelet-ca/ca.crt"}},
		"kubelet insecure TLS":      {args: []string{"--kubelet-insecure-tls"}},
		"kubelet CA and insecure":   {args: []string{"--kubelet-ca-file=/ca.crt", "--kubelet-insecure-tls"}, wantErr: "--kubelet-ca-file and --kubelet-insecure-tls exclude each other"},
		"kubelet via the proxy":     {args: []string{"--kubelet-via-apiserver-proxy"}},
		"kubelet address types":     {args: []string{"--kubelet-preferred-address-types=Hostname,InternalIP"}},
		"kubelet address misspelt":  {args: []string{"--kubelet-preferred-address-types=InternalIp"}, wantErr: `--kubelet-preferred-address-types: unknown address type "InternalIp"`},
		"kubelet page cap quantity": {args: []string{"--kubelet-max-page-bytes=64Mi"}},
		"kubelet page cap bytes":    {args: []string{"--kubelet-max-page-bytes=1048576"}},
		"kubelet page cap too low":  {args: []string{"--kubelet-max-page-bytes=1Ki"}, wantErr: "--kubelet-max-page-bytes must be at least 64Ki"},
		"metrics cert dir on plain HTTP": {args: []string{"--metrics-secure=false", "--metrics-cert-dir=" + certDir},
			wantErr: "--metrics-cert-dir " + `"` + certDir + `"` + " needs --metrics-secure"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Validated directly: RunE would go on to connect.
			o := completedManagerOptions(t, tc.args)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ee *exit.CodeError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ee) || ee.Code != exit.Usage {
				t.Fatalf("Validate = %v, want a usage error containing %q", err, tc.wantErr)
			}
		})
	}
}

// The kubelet source's flags reach the manager's options: by default each
// kubelet is read directly, verified against the manager's own CA, with
// pages of at most 32Mi.
func TestManagerKubeletFlags(t *testing.T) {
	type kubeletOpts struct {
		ViaProxy     bool
		CAFile       string
		Insecure     bool
		AddressTypes []string
		MaxPage      int64
	}
	cases := map[string]struct {
		args []string
		want kubeletOpts
	}{
		"defaults": {want: kubeletOpts{AddressTypes: []string{"InternalIP", "ExternalIP", "Hostname"}, MaxPage: 32 << 20}},
		"every flag": {
			args: []string{"--kubelet-via-apiserver-proxy", "--kubelet-ca-file=/ca.crt", "--kubelet-preferred-address-types=Hostname", "--kubelet-max-page-bytes=64Mi"},
			want: kubeletOpts{ViaProxy: true, CAFile: "/ca.crt", AddressTypes: []string{"Hostname"}, MaxPage: 64 << 20},
		},
		"insecure, and a cap in bytes": {
			args: []string{"--kubelet-insecure-tls", "--kubelet-max-page-bytes=1000000"},
			want: kubeletOpts{Insecure: true, AddressTypes: []string{"InternalIP", "ExternalIP", "Hostname"}, MaxPage: 1000000},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := completedManagerOptions(t, tc.args)
			if err := o.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := kubeletOpts{o.KubeletViaAPIServerProxy, o.KubeletCAFile, o.KubeletInsecureTLS, o.KubeletAddressTypes, o.KubeletMaxPageBytes}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kubelet options (-want,+got):\n%s", diff)
			}
		})
	}
}

// The prices reach the manager's options, and say when they are the
// examples.
func TestManagerPrices(t *testing.T) {
	o := completedManagerOptions(t, nil)
	if err := o.Validate(); err != nil || o.Prices != price.Example || !o.ExamplePrices {
		t.Errorf("defaults: %v, prices %+v, example %v", err, o.Prices, o.ExamplePrices)
	}
	o = completedManagerOptions(t, []string{"--price-cpu-core-hour=0.031", "--price-memory-gib-hour=0"})
	if err := o.Validate(); err != nil || o.Prices != (price.Prices{CPUCoreHour: 0.031}) || o.ExamplePrices {
		t.Errorf("given: %v, prices %+v, example %v", err, o.Prices, o.ExamplePrices)
	}
}

// The metrics are served over HTTPS, to clients the apiserver authorizes,
// unless --metrics-secure=false says otherwise, or the address is a loopback
// one (a manager run by hand or by a test) and the flag is not set.
func TestManagerMetricsSecure(t *testing.T) {
	cases := map[string]struct {
		args []string
		want bool
	}{
		"default (:8080)":                {want: true},
		"every address":                  {args: []string{"--metrics-bind-address=0.0.0.0:8080"}, want: true},
		"pod address":                    {args: []string{"--metrics-bind-address=10.0.0.7:8080"}, want: true},
		"turned off":                     {args: []string{"--metrics-secure=false"}, want: false},
		"loopback":                       {args: []string{"--metrics-bind-address=127.0.0.1:8082"}, want: false},
		"loopback IPv6":                  {args: []string{"--metrics-bind-address=[::1]:8082"}, want: false},
		"localhost":                      {args: []string{"--metrics-bind-address=localhost:8082"}, want: false},
		"loopback, secure asked for":     {args: []string{"--metrics-bind-address=127.0.0.1:8082", "--metrics-secure"}, want: true},
		"loopback, secure asked for (=)": {args: []string{"--metrics-bind-address=127.0.0.1:8082", "--metrics-secure=true"}, want: true},
		"disabled: nothing to serve on":  {args: []string{"--metrics-bind-address=0"}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := completedManagerOptions(t, tc.args)
			if o.MetricsSecure != tc.want {
				t.Errorf("%v: MetricsSecure = %t, want %t", tc.args, o.MetricsSecure, tc.want)
			}
		})
	}
}

// The heap's soft limit leaves the binary's pages their room under small
// container limits, and a tenth under large ones.
func TestGoMemLimit(t *testing.T) {
	const mi = 1 << 20
	cases := map[string]struct{ limit, want uint64 }{
		"the chart's 512Mi: a tenth":  {limit: 512 * mi, want: 512*mi - 512*mi/10},
		"2Gi: a tenth":                {limit: 2048 * mi, want: 2048*mi - 2048*mi/10},
		"150Mi: the binary's pages":   {limit: 150 * mi, want: 102 * mi},
		"200Mi: the binary's pages":   {limit: 200 * mi, want: 152 * mi},
		"64Mi: too small, half of it": {limit: 64 * mi, want: 32 * mi},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := goMemLimit(tc.limit); got != tc.want {
				t.Errorf("goMemLimit(%dMi) = %.1fMi, want %.1fMi", tc.limit/mi, float64(got)/mi, float64(tc.want)/mi)
			}
		})
	}
}

// completedManagerOptions are the manager's options from args, completed
// as RunE completes them before it validates.
func completedManagerOptions(t *testing.T, args []string) *ManagerOptions {
	t.Helper()
	o := &ManagerOptions{configFlags: genericclioptions.NewConfigFlags(false), streams: genericiooptions.NewTestIOStreamsDiscard()}
	cmd := o.command()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	o.Complete(cmd.Flags().Changed("metrics-secure"))
	o.prices.Complete(cmd.Flags())
	return o
}
