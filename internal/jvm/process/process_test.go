package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStatus(t *testing.T) {
	for name, tc := range map[string]struct {
		status  string
		want    Process
		wantErr bool
	}{
		"in a container": {
			status: "Name:\tjava\nUid:\t1000\t1001\t1001\t1001\nGid:\t2000\t2001\t2001\t2001\nNSpid:\t4242\t7\n",
			want:   Process{Proc: "/proc", PID: 4242, NSPID: 7, UID: 1001, GID: 2001},
		},
		"on the node": {
			status: "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpid:\t4242\n",
			want:   Process{Proc: "/proc", PID: 4242, NSPID: 4242},
		},
		"no NSpid":  {status: "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", wantErr: true},
		"bad uid":   {status: "Uid:\tx\tx\nGid:\t0\t0\nNSpid:\t1\n", wantErr: true},
		"empty":     {status: "", wantErr: true},
		"no fields": {status: "Uid:\nGid:\nNSpid:\n", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseStatus("/proc", 4242, []byte(tc.status))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); !tc.wantErr && diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// The JVM's own file is read; a link, another user's file, or a directory
// linked out of the container's root is not.
func TestReadPerfData(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make files of another user")
	}
	proc := t.TempDir()
	root := filepath.Join(proc, "42", "root")
	outside := t.TempDir()
	write := func(name, body string, uid int) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "7"), []byte("node's"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Process{Proc: proc, PID: 42, NSPID: 7, UID: 1000, GID: 1000}
	for name, tc := range map[string]struct {
		setup   func()
		want    string
		wantErr string
	}{
		"own": {
			setup: func() { write("tmp/hsperfdata_app/7", "jvm's", 1000) },
			want:  "jvm's",
		},
		"another user's only": {
			setup:   func() { write("tmp/hsperfdata_app/7", "planted", 1234) },
			wantErr: "not owned by the process's user",
		},
		"a stale one beside": {
			setup: func() {
				write("tmp/hsperfdata_old/7", "stale", 1234)
				write("tmp/hsperfdata_app/7", "jvm's", 1000)
			},
			want: "jvm's",
		},
		"a link to the node": {
			setup: func() {
				write("tmp/x", "", 1000)
				if err := os.MkdirAll(filepath.Join(root, "tmp/hsperfdata_app"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(outside, "7"), filepath.Join(root, "tmp/hsperfdata_app/7")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "7",
		},
		"a directory linked out": {
			setup: func() {
				write("tmp/x", "", 1000)
				if err := os.Symlink(outside, filepath.Join(root, "tmp/hsperfdata_app")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "7",
		},
		"none": {
			setup:   func() { write("tmp/x", "", 1000) },
			wantErr: "no hsperfdata file",
		},
		"too large": {
			setup:   func() { write("tmp/hsperfdata_app/7", strings.Repeat("x", 100), 1000) },
			wantErr: "more than",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.RemoveAll(root); err != nil {
				t.Fatal(err)
			}
			tc.setup()
			got, err := p.ReadPerfData(64)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("read %q, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("read %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
