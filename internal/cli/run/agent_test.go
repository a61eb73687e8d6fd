package run

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tailorhq/tailor/internal/agent"
	"github.com/tailorhq/tailor/internal/cli/exit"
)

// The agent sends its token over TLS only: an http --manager-url, or one
// with no CA to check it by, is a usage error before anything runs.
func TestAgentFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"defaults":                {},
		"https URL with its CA":   {args: []string{"--manager-url=https://10.0.0.2:8444", "--manager-ca-file=/tmp/ca.crt"}},
		"http URL":                {args: []string{"--manager-url=http://10.0.0.2:8444", "--manager-ca-file=/tmp/ca.crt"}, wantErr: "want https"},
		"https URL without CA":    {args: []string{"--manager-url=https://10.0.0.2:8444"}, wantErr: "needs --manager-ca-file"},
		"CA ConfigMap not a name": {args: []string{"--manager-ca-configmap=Tailor_CA"}, wantErr: "--manager-ca-configmap"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &AgentOptions{configFlags: genericclioptions.NewConfigFlags(false), streams: genericiooptions.NewTestIOStreamsDiscard(), Thresholds: agent.DefaultThresholds()}
			if err := o.command().ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
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
