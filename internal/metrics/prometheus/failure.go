package prometheus

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/go-logr/logr"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Failure is why Prometheus gave a query no answer, in tailor's words: its
// Error is what a policy's status, its events and the CLI may show. What
// Prometheus (or the connection) said is left out of it, since it may quote
// series, with their labels, of namespaces the policy's author cannot read;
// failed logs it for the manager's operator, and Unwrap keeps it for
// errors.Is.
type Failure struct {
	Kind FailureKind
	// Status is the HTTP status Prometheus answered with, when it matters
	// and is known; 0 otherwise.
	Status int
	cause  error
}

// FailureKind is what went wrong, as the one who must fix it sees it.
type FailureKind string

const (
	// Unreachable: no connection, or no HTTP answer.
	Unreachable FailureKind = "Unreachable"
	// Timeout: tailor stopped waiting, or Prometheus stopped evaluating.
	Timeout FailureKind = "Timeout"
	// BadQuery: Prometheus refused the query as not valid PromQL.
	BadQuery FailureKind = "BadQuery"
	// Evaluation: the query parsed, but Prometheus could not evaluate it
	// (a many-to-many match, too many samples).
	Evaluation FailureKind = "Evaluation"
	// Refused: Prometheus refused the request itself (credentials,
	// permissions, a wrong URL path).
	Refused FailureKind = "Refused"
	// ServerError: Prometheus failed (HTTP 5xx).
	ServerError FailureKind = "ServerError"
	// BadResponse: what came back is not an answer of the Prometheus API.
	BadResponse FailureKind = "BadResponse"
)

// Error says what went wrong and, where the query is to blame, what to
// change; the manager's log line "prometheus query failed" has the rest.
func (f *Failure) Error() string {
	status := ""
	if f.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", f.Status)
	}
	switch f.Kind {
	case Unreachable:
		return "Prometheus could not be reached"
	case Timeout:
		return "Prometheus did not answer in time"
	case BadQuery:
		return "Prometheus refused the query as invalid" + status + "; check that it knows every function the query calls"
	case Evaluation:
		return "Prometheus could not evaluate the query" + status + ", such as for a many-to-many match or too many samples; aggregate or narrow it"
	case Refused:
		return "Prometheus refused tailor's request" + status + ", such as for its credentials"
	case ServerError:
		return "Prometheus failed to answer" + status
	}
	return "Prometheus's answer could not be read" + status
}

func (f *Failure) Unwrap() error { return f.cause }

// failed classifies err, an error of the Prometheus client, and logs it
// whole for the operator with what was asked (keysAndValues).
func failed(ctx context.Context, err error, keysAndValues ...any) *Failure {
	f := classify(err)
	keysAndValues = append(keysAndValues, "failure", f.Kind, "err", err.Error())
	// The body of an answer that is not the API's JSON (a proxy's error
	// page) is kept out of Error by the client.
	var perr *promv1.Error
	if errors.As(err, &perr) && perr.Detail != "" {
		keysAndValues = append(keysAndValues, "body", truncate(perr.Detail, 1024))
	}
	logr.FromContextOrDiscard(ctx).Info("prometheus query failed", keysAndValues...)
	return f
}

// truncate is s cut to at most n bytes, for a log line.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// classify says which Failure err, an error of the Prometheus client, is.
func classify(err error) *Failure {
	f := &Failure{Kind: BadResponse, cause: err}
	var perr *promv1.Error
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &nerr) && nerr.Timeout():
		f.Kind = Timeout
	case errors.As(err, &perr):
		switch perr.Type {
		case promv1.ErrBadData:
			f.Kind, f.Status = BadQuery, 400
		case promv1.ErrExec:
			f.Kind, f.Status = Evaluation, 422
		case promv1.ErrTimeout, promv1.ErrCanceled:
			f.Kind = Timeout
		case promv1.ErrClient:
			f.Kind, f.Status = Refused, statusOf(perr.Msg)
		case promv1.ErrServer:
			f.Kind, f.Status = ServerError, statusOf(perr.Msg)
		}
	default:
		// The client's own errors, before any HTTP answer: a refused
		// connection, a name that does not resolve, a TLS handshake.
		f.Kind = Unreachable
	}
	return f
}

// statusOf reads the HTTP status from the client's own message for a
// status it has no JSON body for ("server error: 503"); 0 if it is not
// there.
func statusOf(msg string) int {
	var kind string
	var code int
	if _, err := fmt.Sscanf(msg, "%s error: %d", &kind, &code); err != nil {
		return 0
	}
	return code
}
