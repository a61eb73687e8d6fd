package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// Handle keeps one container's cgroup files open between reads, and reads
// each again from its start (cgroup files are made anew at offset 0): a
// read of a container is then one pread per file, where opening each file
// by its path again, inside the tree, costs a dozen system calls. The
// directories are opened inside the tree root (os.Root), so a symlink in
// the tree cannot lead a handle out of it. Not safe for concurrent use.
type Handle struct {
	tree Tree
	c    Container
	dirs map[string]*os.Root
	// files holds each file opened; nil for one that is not there (the
	// PSI files of a kernel without PSI).
	files map[string]*os.File
	buf   []byte
}

// NewBuffer is scratch space for reads: the handles one goroutine reads
// share one.
func NewBuffer() []byte { return make([]byte, maxFile+1) }

// Open returns a handle on a container List found, reading into buf (from
// NewBuffer). Nothing is opened until the first Read.
func (t Tree) Open(c Container, buf []byte) (*Handle, error) {
	if err := checkDir(c.Dir); err != nil {
		return nil, err
	}
	if len(buf) <= maxFile {
		return nil, fmt.Errorf("a read buffer of %d bytes: want NewBuffer's", len(buf))
	}
	return &Handle{tree: t, c: c, dirs: map[string]*os.Root{}, files: map[string]*os.File{}, buf: buf}, nil
}

// Read reads every figure of the container. An error (the cgroup removed:
// the container stopped) means the handle is of no more use.
func (h *Handle) Read() (Sample, error) {
	var s Sample
	return s, h.tree.parse(h.read, &s)
}

func (h *Handle) read(controller, name string) ([]byte, error) {
	if h.tree.Version == V2 {
		controller = ""
	}
	key := controller + "/" + name
	f, opened := h.files[key]
	if !opened {
		dir, err := h.dir(controller)
		if err != nil {
			return nil, err
		}
		f, err = dir.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			h.files[key] = nil
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		h.files[key] = f
	}
	if f == nil {
		return nil, fs.ErrNotExist
	}
	n, err := f.ReadAt(h.buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path.Join(controller, h.c.Dir, name), err)
	}
	if n > maxFile {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a cgroup file", name, maxFile)
	}
	return h.buf[:n], nil
}

func (h *Handle) dir(controller string) (*os.Root, error) {
	if d := h.dirs[controller]; d != nil {
		return d, nil
	}
	root, err := os.OpenRoot(h.tree.Root)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	d, err := root.OpenRoot(path.Join(controller, h.c.Dir))
	if err != nil {
		return nil, err
	}
	h.dirs[controller] = d
	return d, nil
}

// Close closes the container's files.
func (h *Handle) Close() {
	for _, f := range h.files {
		if f != nil {
			_ = f.Close()
		}
	}
	for _, d := range h.dirs {
		_ = d.Close()
	}
	h.files, h.dirs = map[string]*os.File{}, map[string]*os.Root{}
}
