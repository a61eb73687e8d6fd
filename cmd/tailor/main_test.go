package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// make build stamps the version and commit with -ldflags -X. A symbol that
// does not exist is ignored by the linker without a word, so this builds
// the binary with the Makefile's own flags and reads them back.
func TestMakeBuildStampsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, tool := range []string{"make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	dry, err := exec.Command("make", "-C", "../..", "-n", "build", "VERSION=v9.8.7-test", "COMMIT=0123456789abcdef").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, dry)
	}
	m := regexp.MustCompile(`-ldflags '([^']*)'`).FindSubmatch(dry)
	if m == nil {
		t.Fatalf("make -n build passes no -ldflags '...':\n%s", dry)
	}
	bin := filepath.Join(t.TempDir(), "kubectl-tailor")
	if out, err := exec.Command("go", "build", "-ldflags", string(m[1]), "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", m[1], err, out)
	}
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	var got struct {
		ClientVersion struct{ Version, Commit string } `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	want := struct{ Version, Commit string }{"v9.8.7-test", "0123456789abcdef"}
	if diff := cmp.Diff(want, got.ClientVersion); diff != "" {
		t.Errorf("stamped version (-want,+got):\n%s", diff)
	}
}
