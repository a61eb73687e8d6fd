package manager

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/shard"
)

func TestKubeletShareFor(t *testing.T) {
	cases := map[string]struct {
		syncPeriod time.Duration
		want       time.Duration
	}{
		"default 10s period: the source's 5s":       {syncPeriod: 10 * time.Second, want: 5 * time.Second},
		"long period: still 5s":                     {syncPeriod: time.Minute, want: 5 * time.Second},
		"short period: half of it":                  {syncPeriod: 2 * time.Second, want: time.Second},
		"no period given: the source's default (0)": {syncPeriod: 0, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := kubeletShareFor(tc.syncPeriod); got != tc.want {
				t.Errorf("kubeletShareFor(%s) = %s, want %s", tc.syncPeriod, got, tc.want)
			}
		})
	}
}

// Options.Namespaces narrow the shard; a bad name, or a shard scoped to
// other namespaces, is refused with what to change.
func TestScope(t *testing.T) {
	cases := map[string]struct {
		o       Options
		want    shard.Shard
		wantErr string
	}{
		"all":        {o: Options{}, want: shard.Shard{}},
		"namespaces": {o: Options{Namespaces: []string{"team-a", "team-b"}}, want: shard.Shard{Namespaces: []string{"team-a", "team-b"}}},
		"split": {o: Options{Namespaces: []string{"team-a"}, Shard: shard.Shard{Index: 1, Count: 2}},
			want: shard.Shard{Index: 1, Count: 2, Namespaces: []string{"team-a"}}},
		"set twice alike": {o: Options{Namespaces: []string{"team-a"}, Shard: shard.Shard{Namespaces: []string{"team-a"}}},
			want: shard.Shard{Namespaces: []string{"team-a"}}},
		"set on the shard only": {o: Options{Shard: shard.Shard{Namespaces: []string{"team-a"}}},
			want: shard.Shard{Namespaces: []string{"team-a"}}},
		"set twice apart": {o: Options{Namespaces: []string{"team-a"}, Shard: shard.Shard{Namespaces: []string{"team-b"}}},
			wantErr: "set Options.Namespaces only"},
		"bad name":  {o: Options{Namespaces: []string{"Team_A"}}, wantErr: `the manager's namespaces: namespace "Team_A" is not a namespace name`},
		"twice":     {o: Options{Namespaces: []string{"team-a", "team-a"}}, wantErr: `namespace "team-a" is listed twice`},
		"bad shard": {o: Options{Shard: shard.Shard{Index: 2, Count: 2}}, wantErr: "shard index 2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.o.scope()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("scope() error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("scope(): %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scope() (-want,+got):\n%s", diff)
			}
		})
	}
}

// Secure metrics are HTTPS behind the apiserver's authentication and
// authorization, HTTP/1.1 only; plain ones are the bind address alone.
func TestMetricsServerOptions(t *testing.T) {
	cases := map[string]struct {
		o           Options
		wantSecure  bool
		wantCertDir string
	}{
		"plain":                       {o: Options{MetricsAddr: "127.0.0.1:8082"}},
		"disabled":                    {o: Options{MetricsAddr: "0"}},
		"secure, self-signed":         {o: Options{MetricsAddr: ":8080", MetricsSecure: true}, wantSecure: true},
		"secure, certificate mounted": {o: Options{MetricsAddr: ":8080", MetricsSecure: true, MetricsCertDir: "/certs"}, wantSecure: true, wantCertDir: "/certs"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := metricsServerOptions(tc.o)
			if got.BindAddress != tc.o.MetricsAddr {
				t.Errorf("BindAddress = %q, want %q", got.BindAddress, tc.o.MetricsAddr)
			}
			if got.SecureServing != tc.wantSecure || (got.FilterProvider != nil) != tc.wantSecure {
				t.Errorf("SecureServing %t with a filter %t, want both %t", got.SecureServing, got.FilterProvider != nil, tc.wantSecure)
			}
			if got.CertDir != tc.wantCertDir {
				t.Errorf("CertDir = %q, want %q", got.CertDir, tc.wantCertDir)
			}
			cfg := &tls.Config{NextProtos: []string{"h2"}}
			for _, f := range got.TLSOpts {
				f(cfg)
			}
			want := []string{"h2"}
			if tc.wantSecure {
				want = []string{"http/1.1"}
			}
			if diff := cmp.Diff(want, cfg.NextProtos); diff != "" {
				t.Errorf("NextProtos (-want,+got):\n%s", diff)
			}
		})
	}
}
