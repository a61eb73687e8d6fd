package attach

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tailorhq/tailor/internal/jvm/process"
)

// protocolVersion is the attach protocol's, which HotSpot has kept since
// JDK 6: a version, a command and three arguments, each NUL-terminated.
const protocolVersion = "1"

// maxReply bounds a command's reply: a flag's line, or a short error.
const maxReply = 64 << 10

// ErrSignalNotCaught refuses to start a JVM's attach listener when its
// process does not catch SIGQUIT (-Xrs, or not a JVM): the signal would
// kill it.
var ErrSignalNotCaught = errors.New("the process does not catch SIGQUIT (a JVM started with -Xrs, or not a JVM): sending it would kill it")

// CommandError is a JVM's refusal of a command: its status and message.
type CommandError struct {
	Command string
	Status  int
	Message string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("the JVM refused %s (status %d): %s", e.Command, e.Status, e.Message)
}

// Execute runs one attach command in the JVM p and returns its output.
// It starts the JVM's attach listener first if it is not running.
func Execute(ctx context.Context, p process.Process, command string, args ...string) (string, error) {
	if len(args) > 3 {
		return "", fmt.Errorf("attach: %s with %d arguments: the protocol takes 3", command, len(args))
	}
	conn, err := dial(ctx, p)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	var req bytes.Buffer
	for _, s := range append([]string{protocolVersion, command}, append(args, "", "", "")[:3]...) {
		if strings.IndexByte(s, 0) >= 0 {
			return "", fmt.Errorf("attach: %s: an argument holds a NUL byte", command)
		}
		req.WriteString(s)
		req.WriteByte(0)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return "", fmt.Errorf("attach to process %d: sending %s: %w", p.PID, command, err)
	}
	reply, err := io.ReadAll(io.LimitReader(conn, maxReply))
	if err != nil {
		return "", fmt.Errorf("attach to process %d: reading the reply to %s: %w", p.PID, command, err)
	}
	return parseReply(command, reply)
}

// parseReply reads a reply: the status on the first line, then the
// command's output (or, with a status other than 0, why it failed).
func parseReply(command string, reply []byte) (string, error) {
	first, rest, ok := bytes.Cut(reply, []byte("\n"))
	if !ok {
		return "", fmt.Errorf("attach: %s: a reply without a status line: %q", command, reply)
	}
	status, err := strconv.Atoi(strings.TrimSpace(string(first)))
	if err != nil {
		return "", fmt.Errorf("attach: %s: status %q is not a number", command, first)
	}
	if status != 0 {
		return "", &CommandError{Command: command, Status: status, Message: strings.TrimSpace(string(rest))}
	}
	return string(rest), nil
}

// socketName and triggerName are the files of the attach protocol in the
// JVM's /tmp.
func socketName(p process.Process) string  { return ".java_pid" + strconv.Itoa(p.NSPID) }
func triggerName(p process.Process) string { return ".attach_pid" + strconv.Itoa(p.NSPID) }

// dial connects to p's attach listener, starting it if it is not running.
func dial(ctx context.Context, p process.Process) (*net.UnixConn, error) {
	root, err := p.Root()
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	sock := path.Join(process.Tmp, socketName(p))
	conn, err := connect(ctx, p, root, sock)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return conn, err
	}
	if err := start(ctx, p, root, sock); err != nil {
		return nil, err
	}
	return connect(ctx, p, root, sock)
}

// start makes the JVM start its attach listener: the trigger file, then
// SIGQUIT, then waiting for the socket (jcmd waits the same way, a few
// seconds at most).
func start(ctx context.Context, p process.Process, root *os.Root, sock string) error {
	catches, err := catchesQuit(p)
	if err != nil {
		return err
	}
	if !catches {
		return fmt.Errorf("attach to process %d: %w", p.PID, ErrSignalNotCaught)
	}
	trigger := path.Join(process.Tmp, triggerName(p))
	f, err := root.OpenFile(trigger, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		// Another attacher's, still there: the JVM takes either.
	case err != nil:
		return fmt.Errorf("attach to process %d: making /%s: %w", p.PID, trigger, err)
	default:
		_ = f.Close()
		defer func() { _ = root.Remove(trigger) }()
	}
	if err := syscall.Kill(p.PID, syscall.SIGQUIT); err != nil {
		return fmt.Errorf("attach to process %d: sending SIGQUIT: %w", p.PID, err)
	}
	wait := 20 * time.Millisecond
	for {
		if fi, err := root.Lstat(sock); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("attach to process %d: its attach listener did not start (-XX:+DisableAttachMechanism?): %w", p.PID, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// catchesQuit reads whether p catches SIGQUIT (its status' SigCgt mask).
func catchesQuit(p process.Process) (bool, error) {
	b, err := os.ReadFile(path.Join(p.Proc, strconv.Itoa(p.PID), "status"))
	if err != nil {
		return false, err
	}
	return parseSigCgt(b, int(syscall.SIGQUIT))
}

func parseSigCgt(status []byte, sig int) (bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("SigCgt %q: %w", v, err)
			}
			return mask&(1<<(sig-1)) != 0, nil
		}
	}
	return false, errors.New("status has no SigCgt")
}

// connect opens sock inside root without following a link, checks it is
// a socket of the JVM's user, connects to it through its descriptor (so
// the path is not looked up again), and checks the listener is p.
func connect(ctx context.Context, p process.Process, root *os.Root, sock string) (*net.UnixConn, error) {
	fi, err := root.Lstat(sock)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&fs.ModeSocket == 0 || !ok || int(st.Uid) != p.UID {
		return nil, fmt.Errorf("attach to process %d: /%s is not a socket of its user %d", p.PID, sock, p.UID)
	}
	dir, err := root.Open(path.Dir(sock))
	if err != nil {
		return nil, err
	}
	defer func() { _ = dir.Close() }()
	fd, err := unix.Openat(int(dir.Fd()), path.Base(sock), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("attach to process %d: opening /%s: %w", p.PID, sock, err)
	}
	defer func() { _ = unix.Close(fd) }()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("attach to process %d: connecting to /%s: %w", p.PID, sock, err)
	}
	conn := c.(*net.UnixConn)
	if err := checkPeer(conn, p); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// checkPeer checks that the process listening is p: the kernel gives the
// listener's pid in the reader's namespace.
func checkPeer(conn *net.UnixConn, p process.Process) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("attach to process %d: the listener's credentials: %w", p.PID, credErr)
	}
	if int(cred.Pid) != p.PID {
		return fmt.Errorf("attach to process %d: its socket is served by process %d, not by it", p.PID, cred.Pid)
	}
	return nil
}
