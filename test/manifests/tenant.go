package manifests

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TenantSample copies the repository's config/ (root is the repository's
// root) into dir and returns the path of the copy's config/samples/tenant,
// its tenant's namespaces team-a and team-b renamed to a and b wherever
// the sample names them, and, with eviction, the eviction opt-in its
// comments offer turned on (the component in install/, eviction.yaml
// beside writes.yaml), as a user who copies it would. A sample whose
// comments no longer offer the opt-in as this expects is an error, not a
// build without it.
func TenantSample(root, dir, a, b string, eviction bool) (string, error) {
	src := filepath.Join(root, "config")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, "config", rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return "", err
	}
	sample := filepath.Join(dir, "config", "samples", "tenant")
	edits := map[string][][2]string{}
	if eviction {
		edits["install/kustomization.yaml"] = [][2]string{{"\n# components:\n# - ../../../components/eviction\n", "\ncomponents:\n- ../../../components/eviction\n"}}
		edits["kustomization.yaml"] = [][2]string{{"\n# - eviction.yaml\n", "\n- eviction.yaml\n"}}
	}
	return sample, filepath.WalkDir(sample, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(sample, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := string(data)
		for _, e := range edits[filepath.ToSlash(rel)] {
			if !strings.Contains(text, e[0]) {
				return fmt.Errorf("config/samples/tenant/%s no longer offers the eviction opt-in as %q", rel, e[0])
			}
			text = strings.Replace(text, e[0], e[1], 1)
		}
		text = strings.NewReplacer("team-a", a, "team-b", b).Replace(text)
		return os.WriteFile(p, []byte(text), 0o644)
	})
}
