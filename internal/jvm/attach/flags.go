package attach

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/process"
)

// PrintFlag reads one of the JVM's flags ("printflag"), as its value's
// text.
func PrintFlag(ctx context.Context, p process.Process, name string) (string, error) {
	out, err := Execute(ctx, p, "printflag", name)
	if err != nil {
		return "", err
	}
	return parseFlag(name, out)
}

// parseFlag reads printflag's line: -XX:Name=value, or -XX:+Name and
// -XX:-Name for a boolean.
func parseFlag(name, out string) (string, error) {
	line := strings.TrimSpace(out)
	switch line {
	case "-XX:+" + name:
		return "true", nil
	case "-XX:-" + name:
		return "false", nil
	}
	v, ok := strings.CutPrefix(line, "-XX:"+name+"=")
	if !ok {
		return "", fmt.Errorf("attach: printflag %s answered %q", name, line)
	}
	return v, nil
}

// SetFlag sets one of the JVM's manageable flags ("setflag"); the JVM
// refuses others, and values its constraints do not allow.
func SetFlag(ctx context.Context, p process.Process, name, value string) error {
	_, err := Execute(ctx, p, "setflag", name, value)
	return err
}

// SoftMaxFlag is the flag ZGC and Shenandoah aim their heap at: they
// collect to keep the heap under it, and grow past it only when they
// cannot (up to MaxHeapSize). Manageable, so it moves at run time.
const SoftMaxFlag = "SoftMaxHeapSize"

// UnsupportedError refuses to move the soft heap bound of a JVM whose
// collector would ignore it.
type UnsupportedError struct {
	PID       int
	Collector perfdata.Collector
}

func (e *UnsupportedError) Error() string {
	c := string(e.Collector)
	if c == "" {
		c = "an unknown collector"
	}
	return fmt.Sprintf("process %d runs %s, which does not honour %s at run time (ZGC and Shenandoah do): "+
		"its heap is held by -Xmx alone, so tailor leaves the flag as it is", e.PID, c, SoftMaxFlag)
}

// ErrAttachDisabled: the JVM was started with -XX:+DisableAttachMechanism,
// and its flags cannot be set from outside. SIGQUIT would only make it
// print a thread dump.
var ErrAttachDisabled = errors.New("the JVM takes no attach commands (-XX:+DisableAttachMechanism)")

// SoftMax reads the JVM's SoftMaxHeapSize, in bytes.
func SoftMax(ctx context.Context, p process.Process) (int64, error) {
	v, err := PrintFlag(ctx, p, SoftMaxFlag)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attach: %s %q is not a size", SoftMaxFlag, v)
	}
	return n, nil
}

// SetSoftMax moves the JVM's SoftMaxHeapSize to n bytes and returns what
// it reads afterwards. jvm is the JVM's counters, read just before: a
// collector that ignores the flag gets an *UnsupportedError and no
// attach at all, and n is checked against the heap's maximum (the JVM
// refuses more).
func SetSoftMax(ctx context.Context, p process.Process, jvm perfdata.JVM, n int64) (int64, error) {
	if !jvm.Collector.SoftMaxMoves() {
		return 0, &UnsupportedError{PID: p.PID, Collector: jvm.Collector}
	}
	if !jvm.Attachable {
		return 0, fmt.Errorf("process %d: %w", p.PID, ErrAttachDisabled)
	}
	if n <= 0 || n > jvm.HeapMax {
		return 0, fmt.Errorf("process %d: %s %d outside (0, max heap %d]", p.PID, SoftMaxFlag, n, jvm.HeapMax)
	}
	if err := SetFlag(ctx, p, SoftMaxFlag, strconv.FormatInt(n, 10)); err != nil {
		return 0, err
	}
	return SoftMax(ctx, p)
}
