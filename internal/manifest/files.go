package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
)

// Object is a workload found in a manifest file: an object of a kind with
// a pod template.
type Object struct {
	// Ref is as the file writes it: Namespace is empty where the manifest
	// leaves it to the tool that applies it (kubectl -n, kustomize's
	// namespace).
	Ref  Ref
	File string
	// Doc is the document's index in its file, from 0 (as Edit takes it).
	Doc int
	// Line is the line of the document's first key.
	Line     int
	Template *corev1.PodTemplateSpec
}

// Parse finds the workloads in one YAML file of any number of documents.
// Documents of other kinds, and empty ones, are passed over; a file that
// is not YAML (a Helm template) is an error.
func Parse(file string, data []byte) ([]Object, error) {
	docs, err := documents(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []Object
	for i, doc := range docs {
		ref, ok := refOf(doc)
		if !ok {
			continue
		}
		path, ok := TemplatePath(ref.Kind)
		if !ok {
			continue
		}
		obj := Object{Ref: ref, File: file, Doc: i, Line: doc.Line}
		if n := lookup(doc, path...); n != nil {
			var tpl corev1.PodTemplateSpec
			if err := decode(n, &tpl); err != nil {
				return nil, fmt.Errorf("%s: %s: pod template: %w", file, ref, err)
			}
			obj.Template = &tpl
		}
		out = append(out, obj)
	}
	return out, nil
}

// documents are the mapping at the root of each document of data; an
// empty document is nil, so indexes count every document.
func documents(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var root *yaml.Node
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 && n.Content[0].Kind == yaml.MappingNode {
			root = n.Content[0]
		}
		out = append(out, root)
	}
}

func refOf(doc *yaml.Node) (Ref, bool) {
	if doc == nil {
		return Ref{}, false
	}
	str := func(path ...string) string {
		if n := lookup(doc, path...); n != nil && n.Kind == yaml.ScalarNode {
			return n.Value
		}
		return ""
	}
	r := Ref{APIVersion: str("apiVersion"), Kind: str("kind"), Namespace: str("metadata", "namespace"), Name: str("metadata", "name")}
	return r, r.Kind != "" && r.Name != ""
}

// lookup walks mapping keys from n; nil where one is missing.
func lookup(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// decode reads a YAML node into a Kubernetes type through JSON, as the
// apiserver reads the manifest.
func decode(n *yaml.Node, into any) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// MissingError is a value Edit would have to add: the manifest does not
// write it (the apiserver defaults it, from a limit or a LimitRange), and
// an edit in place only replaces what is written. A strategic-merge patch
// adds it.
type MissingError struct {
	Container, Field string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("container %s has no %s in the manifest to replace", e.Container, e.Field)
}

// Edit writes containers' values into document doc of data in place:
// each value replaces the one the manifest writes, in the same quoting, so
// that comments, order and layout stay as they are and the change reads as
// a diff of those values only. A value the manifest does not write is a
// *MissingError; nothing is written then.
func Edit(data []byte, doc int, kind string, containers []Container) ([]byte, error) {
	docs, err := documents(data)
	if err != nil {
		return nil, err
	}
	if doc < 0 || doc >= len(docs) || docs[doc] == nil {
		return nil, fmt.Errorf("no document %d", doc)
	}
	path, ok := TemplatePath(kind)
	if !ok {
		return nil, fmt.Errorf("kind %s has no pod template tailor knows", kind)
	}
	spec := lookup(docs[doc], append(append([]string(nil), path...), "spec")...)
	type edit struct {
		node  *yaml.Node
		value string
	}
	var edits []edit
	for _, c := range containers {
		list := "containers"
		if c.Init {
			list = "initContainers"
		}
		item := byName(lookup(spec, list), c.Name)
		if item == nil {
			return nil, &MissingError{Container: c.Name, Field: "entry in " + list}
		}
		for _, part := range []struct {
			name string
			l    corev1.ResourceList
		}{{"requests", c.Requests}, {"limits", c.Limits}} {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				q, ok := part.l[r]
				if !ok {
					continue
				}
				n := lookup(item, "resources", part.name, string(r))
				if n == nil || n.Kind != yaml.ScalarNode {
					return nil, &MissingError{Container: c.Name, Field: "resources." + part.name + "." + string(r)}
				}
				edits = append(edits, edit{n, q.String()})
			}
		}
	}
	lines := splitLines(data)
	// Right to left within a line, so that earlier columns stay put.
	sort.Slice(edits, func(i, j int) bool {
		a, b := edits[i].node, edits[j].node
		return a.Line > b.Line || (a.Line == b.Line && a.Column > b.Column)
	})
	for _, e := range edits {
		if err := replaceScalar(lines, e.node, e.value); err != nil {
			return nil, err
		}
	}
	return bytes.Join(lines, nil), nil
}

// byName is the item of a sequence of mappings whose name is name.
func byName(seq *yaml.Node, name string) *yaml.Node {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range seq.Content {
		if n := lookup(item, "name"); n != nil && n.Value == name {
			return item
		}
	}
	return nil
}

// splitLines cuts data after each newline; the last line may have none.
func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

// replaceScalar replaces the scalar n's text in its line with value,
// quoted as n was.
func replaceScalar(lines [][]byte, n *yaml.Node, value string) error {
	if n.Line < 1 || n.Line > len(lines) {
		return fmt.Errorf("line %d: out of the file", n.Line)
	}
	line := lines[n.Line-1]
	// Column counts characters from 1.
	start := 0
	for col := 1; col < n.Column && start < len(line); col++ {
		_, size := utf8.DecodeRune(line[start:])
		start += size
	}
	var old, repl string
	switch n.Style {
	case 0:
		old, repl = n.Value, value
	case yaml.DoubleQuotedStyle:
		old, repl = `"`+n.Value+`"`, `"`+value+`"`
	case yaml.SingleQuotedStyle:
		old, repl = `'`+n.Value+`'`, `'`+value+`'`
	default:
		return fmt.Errorf("line %d: %q is written in a style tailor does not edit in place", n.Line, n.Value)
	}
	if !bytes.HasPrefix(line[start:], []byte(old)) {
		return fmt.Errorf("line %d: %q is not where the YAML parser put it", n.Line, n.Value)
	}
	edited := make([]byte, 0, len(line)-len(old)+len(repl))
	edited = append(append(append(edited, line[:start]...), repl...), line[start+len(old):]...)
	lines[n.Line-1] = edited
	return nil
}

// Diff is a unified diff of a file whose lines Edit changed (edits keep
// the number of lines), with three lines of context, under the names
// a/path and b/path; "" when nothing changed.
func Diff(path string, before, after []byte) string {
	a, b := splitLines(before), splitLines(after)
	if len(a) != len(b) {
		// Edit never adds or removes a line.
		panic(fmt.Sprintf("manifest.Diff: %d lines before, %d after", len(a), len(b)))
	}
	var changed []int
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			changed = append(changed, i)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", path, path)
	for i := 0; i < len(changed); {
		// A hunk takes every change with at most two contexts of
		// unchanged lines before it, as diff -u does.
		j := i
		for j+1 < len(changed) && changed[j+1]-changed[j]-1 <= 2*context {
			j++
		}
		from, to := max(changed[i]-context, 0), min(changed[j]+context+1, len(a))
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", from+1, to-from, from+1, to-from)
		for k := from; k < to; {
			if bytes.Equal(a[k], b[k]) {
				writeLine(&out, ' ', a[k])
				k++
				continue
			}
			// A run of changed lines: all of the old, then the new.
			end := k
			for end < to && !bytes.Equal(a[end], b[end]) {
				end++
			}
			for m := k; m < end; m++ {
				writeLine(&out, '-', a[m])
			}
			for m := k; m < end; m++ {
				writeLine(&out, '+', b[m])
			}
			k = end
		}
		i = j + 1
	}
	return out.String()
}

func writeLine(out *strings.Builder, mark byte, line []byte) {
	out.WriteByte(mark)
	out.Write(line)
	if !bytes.HasSuffix(line, []byte("\n")) {
		out.WriteString("\n\\ No newline at end of file\n")
	}
}
