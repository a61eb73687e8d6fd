package attach

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseReply(t *testing.T) {
	for name, tc := range map[string]struct {
		reply   string
		want    string
		wantErr *CommandError
		bad     bool
	}{
		"ok":          {reply: "0\n-XX:SoftMaxHeapSize=1024\n", want: "-XX:SoftMaxHeapSize=1024\n"},
		"refused":     {reply: "1\nflag 'X' cannot be changed\n", wantErr: &CommandError{Command: "setflag", Status: 1, Message: "flag 'X' cannot be changed"}},
		"no status":   {reply: "", bad: true},
		"not numeric": {reply: "ok\n", bad: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseReply("setflag", []byte(tc.reply))
			var ce *CommandError
			switch {
			case tc.wantErr != nil:
				if !errors.As(err, &ce) {
					t.Fatalf("error %v, want a CommandError", err)
				}
				if diff := cmp.Diff(tc.wantErr, ce); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
			case tc.bad:
				if err == nil || errors.As(err, &ce) {
					t.Errorf("reply %q: error %v, want one that is not the JVM's", tc.reply, err)
				}
			case err != nil || got != tc.want:
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseFlag(t *testing.T) {
	for out, want := range map[string]string{
		"-XX:SoftMaxHeapSize=536870912\n": "536870912",
		"-XX:+UseZGC\n":                   "true",
		"-XX:-UseZGC":                     "false",
	} {
		name := "SoftMaxHeapSize"
		if want == "true" || want == "false" {
			name = "UseZGC"
		}
		if got, err := parseFlag(name, out); err != nil || got != want {
			t.Errorf("parseFlag(%q) = %q, %v; want %q", out, got, err, want)
		}
	}
	if _, err := parseFlag("SoftMaxHeapSize", "-XX:MaxHeapSize=1\n"); err == nil {
		t.Errorf("another flag's line read as SoftMaxHeapSize")
	}
}

func TestParseSigCgt(t *testing.T) {
	for status, want := range map[string]bool{
		"SigCgt:\t0000000101005ccd\n": true,  // a JVM
		"SigCgt:\t0000000101001cc8\n": false, // a JVM with -Xrs
		"SigCgt:\t0000000000000000\n": false,
	} {
		if got, err := parseSigCgt([]byte(status), 3); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", status, got, err, want)
		}
	}
	for _, bad := range []string{"", "SigCgt:\tzz\n"} {
		if _, err := parseSigCgt([]byte(bad), 3); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}
