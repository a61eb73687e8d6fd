package deploy

import (
	"github.com/tailorhq/tailor/test/cluster"

	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestHelmPrometheusClient: prometheusClient renders as the manager's
// --prometheus-* flags, which the manager parses, each file flag naming a
// file the pod mounts from the Secret or ConfigMap key the values name,
// read-only; where Prometheus is not read, nothing is rendered.
func TestHelmPrometheusClient(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-prom", "deploy-test-prom"
	secured := []string{"prometheusURL=https://prometheus.example:9090", "prometheusRateWindow=2m",
		"prometheusClient.bearerToken.secretName=prom-token", "prometheusClient.ca.configMapName=prom-ca",
		"prometheusClient.clientCertSecretName=prom-mtls", "prometheusClient.headers.X-Scope-OrgID=team-a"}
	cases := map[string]struct {
		set []string
		// wantFlags maps each --prometheus-* flag but the URL to its value.
		wantFlags map[string]string
		// wantFiles maps each file flag to "Kind name key" it is mounted from.
		wantFiles map[string]string
	}{
		"not read": {set: append([]string{"metricsSource=kubelet"}, secured...)},
		"bearer token, CA from a ConfigMap, client certificate, header": {
			set: append([]string{"metricsSource=prometheus"}, secured...),
			wantFlags: map[string]string{
				"prometheus-bearer-token-file": "/etc/tailor/prometheus-bearer-token/token",
				"prometheus-ca-file":           "/etc/tailor/prometheus-ca/ca.crt",
				"prometheus-cert-file":         "/etc/tailor/prometheus-client-cert/tls.crt",
				"prometheus-key-file":          "/etc/tailor/prometheus-client-cert/tls.key",
				"prometheus-header":            "[X-Scope-OrgID=team-a]",
				"prometheus-rate-window":       "2m0s",
			},
			wantFiles: map[string]string{
				"prometheus-bearer-token-file": "Secret prom-token token",
				"prometheus-ca-file":           "ConfigMap prom-ca ca.crt",
				"prometheus-cert-file":         "Secret prom-mtls tls.crt",
				"prometheus-key-file":          "Secret prom-mtls tls.key",
			},
		},
		"basic auth, CA from a Secret, the agent's fallback": {
			set: []string{"agent.enabled=true", "agent.fallback=prometheus", "prometheusClient.basicAuth.username=tailor",
				"prometheusClient.basicAuth.secretName=prom-basic", "prometheusClient.ca.secretName=prom-ca", "prometheusClient.ca.key=bundle.pem",
				"prometheusClient.insecureSkipVerify=true"},
			wantFlags: map[string]string{
				"prometheus-basic-auth-username":      "tailor",
				"prometheus-basic-auth-password-file": "/etc/tailor/prometheus-basic-auth/password",
				"prometheus-ca-file":                  "/etc/tailor/prometheus-ca/bundle.pem",
				"prometheus-insecure-skip-verify":     "true",
				"prometheus-rate-window":              "1m0s",
			},
			wantFiles: map[string]string{
				"prometheus-basic-auth-password-file": "Secret prom-basic password",
				"prometheus-ca-file":                  "Secret prom-ca bundle.pem",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderHelm(t, release, namespace, tc.set...)
			var d appsv1.Deployment
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
						t.Fatal(err)
					}
				}
			}
			flags := parseVerb(t, "manager", managerArgs(t, objs))
			gotFlags := map[string]string{}
			gotFiles := map[string]string{}
			pod := d.Spec.Template.Spec
			flags.Visit(func(f *pflag.Flag) {
				if !strings.HasPrefix(f.Name, "prometheus-") || f.Name == "prometheus-url" {
					return
				}
				gotFlags[f.Name] = f.Value.String()
				if strings.HasSuffix(f.Name, "-file") {
					gotFiles[f.Name] = mountedFrom(t, pod, f.Value.String())
				}
			})
			if tc.wantFlags == nil {
				tc.wantFlags, tc.wantFiles = map[string]string{}, map[string]string{}
			}
			if diff := cmp.Diff(tc.wantFlags, gotFlags); diff != "" {
				t.Errorf("--prometheus-* flags (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFiles, gotFiles); diff != "" {
				t.Errorf("files mounted (-want,+got):\n%s", diff)
			}
			if len(tc.wantFiles) == 0 && len(pod.Volumes) != 0 {
				t.Errorf("volumes %v, want none", pod.Volumes)
			}
		})
	}
}

// mountedFrom is "Kind name key" of the ConfigMap or Secret key file is
// mounted from, read-only, in the manager container of pod.
func mountedFrom(t *testing.T, pod corev1.PodSpec, file string) string {
	t.Helper()
	dir, base := path.Split(file)
	for _, c := range pod.Containers {
		if c.Name != "manager" {
			continue
		}
		for _, m := range c.VolumeMounts {
			if strings.TrimSuffix(dir, "/") != m.MountPath {
				continue
			}
			if !m.ReadOnly {
				t.Errorf("volume %s is mounted writable", m.Name)
			}
			for _, v := range pod.Volumes {
				if v.Name != m.Name {
					continue
				}
				kind, name, items := "", "", []corev1.KeyToPath(nil)
				switch {
				case v.Secret != nil:
					kind, name, items = "Secret", v.Secret.SecretName, v.Secret.Items
				case v.ConfigMap != nil:
					kind, name, items = "ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items
				}
				for _, it := range items {
					if it.Path == base {
						return kind + " " + name + " " + it.Key
					}
				}
			}
		}
	}
	t.Errorf("%s is mounted from no Secret or ConfigMap key", file)
	return ""
}

// The chart refuses a prometheusClient the manager would refuse, saying
// what to change.
func TestHelmPrometheusClientRefused(t *testing.T) {
	cluster.Offline(t)
	cases := map[string]struct {
		set     []string
		wantErr string
	}{
		"bearer and basic":       {[]string{"prometheusClient.bearerToken.secretName=a", "prometheusClient.basicAuth.username=u", "prometheusClient.basicAuth.secretName=b"}, "set bearerToken or basicAuth, not both"},
		"user without password":  {[]string{"prometheusClient.basicAuth.username=u"}, "set username and secretName together"},
		"CA from two places":     {[]string{"prometheusClient.ca.configMapName=a", "prometheusClient.ca.secretName=b"}, "set configMapName or secretName, not both"},
		"not a Secret name":      {[]string{"prometheusClient.bearerToken.secretName=Prom_Token"}, "/prometheusClient/bearerToken/secretName"},
		"unknown client setting": {[]string{"prometheusClient.tokenFile=/t"}, "tokenFile"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, nil, "prom", "deploy-prom", append([]string{"metricsSource=prometheus"}, tc.set...)...)
			if err == nil || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("helm template --set %q: err %v, stderr %q: want it refused with %q", tc.set, err, stderr, tc.wantErr)
			}
		})
	}
}
