package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Process is one process seen from the node.
type Process struct {
	// Proc is where the node's proc filesystem is mounted ("/proc").
	Proc string
	// PID is the process's pid on the node (in the reader's namespace).
	PID int
	// NSPID is its pid in its own, innermost pid namespace: the pid a JVM
	// names its files by.
	NSPID int
	// UID and GID are its effective user and group, on the node.
	UID, GID int
}

// Of reads pid's status under proc.
func Of(proc string, pid int) (Process, error) {
	b, err := os.ReadFile(path.Join(proc, strconv.Itoa(pid), "status"))
	if err != nil {
		return Process{}, err
	}
	return parseStatus(proc, pid, b)
}

// parseStatus reads NSpid, Uid and Gid from a /proc/<pid>/status.
func parseStatus(proc string, pid int, b []byte) (Process, error) {
	p := Process{Proc: proc, PID: pid, NSPID: -1, UID: -1, GID: -1}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(value)
		var err error
		switch key {
		case "NSpid":
			// One pid per nested namespace, the node's first, the
			// process's own last.
			if len(f) > 0 {
				p.NSPID, err = strconv.Atoi(f[len(f)-1])
			}
		case "Uid":
			// Real, effective, saved, filesystem: the JVM checks the
			// effective one.
			if len(f) > 1 {
				p.UID, err = strconv.Atoi(f[1])
			}
		case "Gid":
			if len(f) > 1 {
				p.GID, err = strconv.Atoi(f[1])
			}
		}
		if err != nil {
			return Process{}, fmt.Errorf("process %d: status %s: %w", pid, key, err)
		}
	}
	if p.NSPID <= 0 || p.UID < 0 || p.GID < 0 {
		return Process{}, fmt.Errorf("process %d: status has no NSpid, Uid or Gid (a kernel older than 4.1?)", pid)
	}
	return p, nil
}

// Root opens the process's root directory: its container's filesystem.
// Opening another user's needs CAP_SYS_PTRACE (the kernel checks it as
// for reading its memory).
func (p Process) Root() (*os.Root, error) {
	r, err := os.OpenRoot(path.Join(p.Proc, strconv.Itoa(p.PID), "root"))
	if err != nil {
		return nil, fmt.Errorf("process %d: its root: %w", p.PID, err)
	}
	return r, nil
}

// Tmp is the directory a HotSpot JVM on Linux keeps its perfdata and
// attach files in, whatever java.io.tmpdir says.
const Tmp = "tmp"

// ErrNoPerfData says the process has no hsperfdata file: not a HotSpot
// JVM, or one started with -XX:-UsePerfData or -XX:+PerfDisableSharedMem.
var ErrNoPerfData = errors.New("no hsperfdata file")

// ReadPerfData reads the process's hsperfdata file, at most max bytes:
// tmp/hsperfdata_<user>/<nspid> in its root, owned by its user. A user
// name is the container's, which the node cannot look up: each
// hsperfdata_* directory is tried, and a file its user does not own (one
// left by an earlier process of the same pid, or planted) is not read.
func (p Process) ReadPerfData(max int64) ([]byte, error) {
	root, err := p.Root()
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	tmp, err := root.Open(Tmp)
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", p.PID, err)
	}
	names, err := tmp.Readdirnames(-1)
	_ = tmp.Close()
	if err != nil {
		return nil, fmt.Errorf("process %d: listing /tmp: %w", p.PID, err)
	}
	var errs []error
	for _, n := range names {
		if !strings.HasPrefix(n, "hsperfdata_") {
			continue
		}
		b, err := p.readOwned(root, path.Join(Tmp, n, strconv.Itoa(p.NSPID)), max)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return b, nil
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("process %d: %w", p.PID, errors.Join(errs...))
	}
	return nil, fmt.Errorf("process %d: %w in /tmp/hsperfdata_*/%d", p.PID, ErrNoPerfData, p.NSPID)
}

// readOwned reads name in root if it is a regular file the process's user
// owns, of at most max bytes.
func (p Process) readOwned(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := p.owns(name, fi); err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("/%s is %d bytes, more than the %d a JVM writes", name, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("/%s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("/%s grew past %d bytes while read", name, max)
	}
	return b, nil
}

// owns checks that fi, found at name, is a regular file of the process's
// user: the JVM's own.
func (p Process) owns(name string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("/%s is not a regular file", name)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != p.UID {
		return fmt.Errorf("/%s is not owned by the process's user %d", name, p.UID)
	}
	return nil
}
