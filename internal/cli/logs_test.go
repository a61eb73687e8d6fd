package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailorhq/tailor/internal/cli/exit"
)

func TestLogFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"manager", "--zap-log-level=loud"},
		{"agent", "--zap-encoder=xml"},
	} {
		var out, errOut bytes.Buffer
		if code := Execute("tailor", args, nil, &out, &errOut); code != exit.Usage {
			t.Errorf("%v: exit %d, want %d; stderr: %s", args, code, exit.Usage, errOut.String())
		}
		if !strings.Contains(errOut.String(), strings.SplitN(args[1], "=", 2)[0]) {
			t.Errorf("%v: stderr does not name the flag: %s", args, errOut.String())
		}
	}
}
