package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/test/manifests"
)

// dist is the release directory under test, and version the VERSION it was
// built with.
func dist(t *testing.T) (string, string) {
	t.Helper()
	dir, version := os.Getenv("TAILOR_RELEASE_DIST"), os.Getenv("TAILOR_RELEASE_VERSION")
	if dir == "" || version == "" {
		t.Skip("TAILOR_RELEASE_DIST and TAILOR_RELEASE_VERSION are not set: make release builds one (hack/check.sh runs this test on it)")
	}
	return dir, version
}

// platforms are those the release was built for: make release's
// RELEASE_PLATFORMS unless TAILOR_RELEASE_PLATFORMS says fewer.
var platforms = strings.Fields(cmp.Or(os.Getenv("TAILOR_RELEASE_PLATFORMS"), "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"))

// Every artifact is in SHA256SUMS, with its sum.
func TestChecksums(t *testing.T) {
	dir, version := dist(t)
	data, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not '<sum>  <file>'", s.Text())
		}
		listed[name] = true
		if got := fileSum(t, filepath.Join(dir, name)); got != sum {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s", name, got, sum)
		}
	}
	want := []string{"tailor.krew.yaml", "tailor-" + version + "-image.oci.tar", "tailor-" + version + ".sbom.cdx.json"}
	for _, p := range platforms {
		want = append(want, archiveName(version, p)+".tar.gz")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tgz") {
			want = append(want, e.Name())
		}
	}
	for _, name := range want {
		if !listed[name] {
			t.Errorf("%s is not in SHA256SUMS (or not built)", name)
		}
	}
}

// Each platform's archive holds the binary, its kubectl plugin links and the
// licence; the binary is built for its platform and stamped with the version.
func TestArchives(t *testing.T) {
	dir, version := dist(t)
	for _, p := range platforms {
		t.Run(p, func(t *testing.T) {
			name := archiveName(version, p)
			files := readTarGz(t, filepath.Join(dir, name+".tar.gz"))
			for _, f := range []string{"tailor", "LICENSE", "README.md", "CHANGELOG.md"} {
				if _, ok := files[name+"/"+f]; !ok {
					t.Errorf("%s has no %s", name, f)
				}
			}
			for _, link := range []string{"kubectl-tailor", "kubectl_complete-tailor"} {
				if got := files[name+"/"+link]; got.link != "tailor" {
					t.Errorf("%s/%s links to %q, want tailor", name, link, got.link)
				}
			}
			if !strings.Contains(string(files[name+"/LICENSE"].data), "Apache License") {
				t.Errorf("%s/LICENSE is not the Apache licence", name)
			}
			bin := files[name+"/tailor"].data
			if p == runtime.GOOS+"/"+runtime.GOARCH {
				exe := filepath.Join(t.TempDir(), "tailor")
				if err := os.WriteFile(exe, bin, 0o755); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(exe, "version").CombinedOutput()
				if err != nil {
					t.Fatalf("tailor version: %v: %s", err, out)
				}
				if !strings.Contains(string(out), version) {
					t.Errorf("tailor version says %q, want it to name %s", out, version)
				}
			}
			if strings.HasPrefix(p, "linux/") {
				checkELF(t, bin, strings.TrimPrefix(p, "linux/"))
			}
		})
	}
}

// The image is one OCI index of linux/amd64 and linux/arm64, each running
// /tailor as the non-root user its /etc/passwd names, with a CA bundle.
func TestImage(t *testing.T) {
	dir, version := dist(t)
	blobs := readTar(t, filepath.Join(dir, "tailor-"+version+"-image.oci.tar"))
	var top index
	mustJSON(t, blobs["index.json"].data, &top)
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want one image index", len(top.Manifests))
	}
	if name := top.Manifests[0].Annotations["io.containerd.image.name"]; name != "ghcr.io/tailorhq/tailor:"+version {
		t.Errorf("image name %q, want ghcr.io/tailorhq/tailor:%s", name, version)
	}
	var idx index
	mustJSON(t, blob(t, blobs, top.Manifests[0].Digest), &idx)
	var got []string
	for _, m := range idx.Manifests {
		plat := m.Platform.OS + "/" + m.Platform.Architecture
		got = append(got, plat)
		t.Run(plat, func(t *testing.T) {
			var man struct {
				Config descriptor   `json:"config"`
				Layers []descriptor `json:"layers"`
			}
			mustJSON(t, blob(t, blobs, m.Digest), &man)
			var cfg struct {
				Architecture string `json:"architecture"`
				Config       struct {
					User       string   `json:"User"`
					Entrypoint []string `json:"Entrypoint"`
				} `json:"config"`
			}
			mustJSON(t, blob(t, blobs, man.Config.Digest), &cfg)
			if cfg.Architecture != m.Platform.Architecture {
				t.Errorf("config architecture %s in the %s manifest", cfg.Architecture, plat)
			}
			if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/tailor"}) {
				t.Errorf("config runs %v as %q, want /tailor as 65532:65532", cfg.Config.Entrypoint, cfg.Config.User)
			}
			if len(man.Layers) != 1 {
				t.Fatalf("%d layers, want 1", len(man.Layers))
			}
			layer := readTarBytes(t, blob(t, blobs, man.Layers[0].Digest))
			checkELF(t, layer["tailor"].data, m.Platform.Architecture)
			if ca := layer["etc/ssl/certs/ca-certificates.crt"].data; !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
				t.Errorf("no CA bundle at /etc/ssl/certs/ca-certificates.crt")
			}
			if pw := string(layer["etc/passwd"].data); !strings.Contains(pw, "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd names no nonroot user 65532: %q", pw)
			}
		})
	}
	slices.Sort(got)
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("image platforms %v, want %v", got, want)
	}
}

// The chart installs this release's image by default.
func TestChart(t *testing.T) {
	dir, version := dist(t)
	charts, _ := filepath.Glob(filepath.Join(dir, "tailor-*.tgz"))
	if len(charts) != 1 {
		t.Fatalf("%d packaged charts, want 1: %v", len(charts), charts)
	}
	files := readTarGz(t, charts[0])
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["tailor/Chart.yaml"].data, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != version {
		t.Errorf("chart appVersion %q, want %s (the image tag it installs)", chart.AppVersion, version)
	}
	if filepath.Base(charts[0]) != "tailor-"+chart.Version+".tgz" {
		t.Errorf("chart %s has version %s", filepath.Base(charts[0]), chart.Version)
	}
	for _, f := range []string{"tailor/values.schema.json", "tailor/templates/deployment.yaml", "tailor/crds/autoscaling.tailor.dev_tailorpolicies.yaml"} {
		if _, ok := files[f]; !ok {
			t.Errorf("the chart has no %s", f)
		}
	}
}

// The packaged chart, as helm reads it, installs exactly this release's
// image: helm show chart says appVersion is the version, and helm
// template runs every container, the manager's and the node agent's, on
// ghcr.io/tailorhq/tailor:VERSION. (The controller tier renders it
// against an apiserver and dry-run applies every object:
// TestReleasedChartInstalls.)
func TestChartRendersItsVersion(t *testing.T) {
	dir, version := dist(t)
	helm := os.Getenv("TAILOR_HELM")
	if helm == "" {
		t.Skip("TAILOR_HELM is not set: hack/check.sh sets it to the pinned helm")
	}
	charts, _ := filepath.Glob(filepath.Join(dir, "tailor-*.tgz"))
	if len(charts) != 1 {
		t.Fatalf("%d packaged charts, want 1: %v", len(charts), charts)
	}
	out, err := exec.Command(helm, "show", "chart", charts[0]).Output()
	if err != nil {
		t.Fatalf("helm show chart %s: %v", charts[0], err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(out, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != version {
		t.Errorf("helm show chart: appVersion %q, want %s", chart.AppVersion, version)
	}
	for name, set := range map[string][]string{"defaults": nil, "with the node agent": {"agent.enabled=true"}} {
		objs, err := manifests.HelmTemplate{Helm: helm, Chart: charts[0], Release: "tailor", Namespace: "tailor-system", Set: set}.Objects()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		images := manifests.Images(objs)
		if want := map[string]int{"defaults": 1, "with the node agent": 2}[name]; len(images) != want {
			t.Errorf("%s: %d containers rendered (%v), want %d", name, len(images), images, want)
		}
		for container, image := range images {
			if want := "ghcr.io/tailorhq/tailor:" + version; image != want {
				t.Errorf("%s: %s runs %s, want %s", name, container, image, want)
			}
		}
	}
}

// The krew manifest's sums are the archives'.
func TestKrewManifest(t *testing.T) {
	dir, version := dist(t)
	data, err := os.ReadFile(filepath.Join(dir, "tailor.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var plugin struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &plugin); err != nil {
		// Fields the test does not name are fine: only its shape matters.
		if err := yaml.Unmarshal(data, &plugin); err != nil {
			t.Fatal(err)
		}
	}
	if plugin.Kind != "Plugin" || plugin.Metadata.Name != "tailor" || plugin.Spec.Version != version {
		t.Errorf("krew manifest %s %s version %s", plugin.Kind, plugin.Metadata.Name, plugin.Spec.Version)
	}
	if len(plugin.Spec.Platforms) != len(platforms) {
		t.Errorf("%d platforms in the krew manifest, want %d", len(plugin.Spec.Platforms), len(platforms))
	}
	for _, p := range plugin.Spec.Platforms {
		plat := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		archive := archiveName(version, plat) + ".tar.gz"
		if !strings.HasSuffix(p.URI, "/"+version+"/"+archive) {
			t.Errorf("%s: uri %s does not name %s of %s", plat, p.URI, archive, version)
		}
		if got := fileSum(t, filepath.Join(dir, archive)); got != p.SHA256 {
			t.Errorf("%s: sha256 %s in the manifest, the archive's is %s", plat, p.SHA256, got)
		}
		if p.Bin != "tailor" {
			t.Errorf("%s: bin %q", plat, p.Bin)
		}
	}
}

// The SBOM lists the modules linked in.
func TestSBOM(t *testing.T) {
	dir, version := dist(t)
	data, err := os.ReadFile(filepath.Join(dir, "tailor-"+version+".sbom.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	mustJSON(t, data, &bom)
	if bom.BOMFormat != "CycloneDX" {
		t.Errorf("bomFormat %q", bom.BOMFormat)
	}
	names := map[string]bool{}
	for _, c := range bom.Components {
		names[c.Name] = true
	}
	for _, m := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "github.com/prometheus/client_golang"} {
		if !names[m] {
			t.Errorf("the SBOM does not list %s (%d components)", m, len(bom.Components))
		}
	}
}

func archiveName(version, platform string) string {
	os, arch, _ := strings.Cut(platform, "/")
	return fmt.Sprintf("tailor-%s-%s-%s", version, os, arch)
}

type descriptor struct {
	Digest   string `json:"digest"`
	Platform struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
	Annotations map[string]string `json:"annotations"`
}

type index struct {
	Manifests []descriptor `json:"manifests"`
}

type entry struct {
	data []byte
	link string
}

func blob(t *testing.T, files map[string]entry, digest string) []byte {
	t.Helper()
	e, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s is not in the image", digest)
	}
	sum := sha256.Sum256(e.data)
	if "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("blob %s does not hash to its digest", digest)
	}
	return e.data
}

func checkELF(t *testing.T, bin []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Errorf("not an ELF binary: %v", err)
		return
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("binary for %s, want %s", f.Machine, want)
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func readTarGz(t *testing.T, path string) map[string]entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return readTarFrom(t, zr)
}

func readTar(t *testing.T, path string) map[string]entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTarBytes(t, data)
}

func readTarBytes(t *testing.T, data []byte) map[string]entry {
	t.Helper()
	return readTarFrom(t, bytes.NewReader(data))
}

func readTarFrom(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "./")] = entry{data: data, link: h.Linkname}
	}
}
