package exit

import "fmt"

// Exit codes are part of the CLI's contract for scripts.
const (
	OK    = 0
	Error = 1
	// Usage is a bad flag or argument: the user must change the command.
	Usage = 2
	// Refused means Kubernetes would refuse (or did refuse) the resize.
	Refused = 3
	// Incomplete means the apiserver accepted the resize but the kubelet did
	// not finish it: Infeasible, Error, or still pending when --timeout ran out.
	Incomplete = 4
)

// CodeError carries an exit code through cobra's error return.
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string { return e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }

// WithCode attaches an exit code to err.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &CodeError{Code: code, Err: err}
}

// Usagef reports a mistake in the command line itself.
func Usagef(format string, args ...any) error {
	return WithCode(Usage, fmt.Errorf(format, args...))
}
