package run

import (
	"flag"
	"io"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logFlags are the long-running verbs' (manager, agent) logging flags:
// controller-runtime's standard --zap-* flags, which operators of other
// controllers already know, and tailor's older --development.
type logFlags struct {
	zap         zap.Options
	development bool
}

// bind adds the flags to fs.
func (l *logFlags) bind(fs *pflag.FlagSet) {
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	l.zap.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	fs.BoolVar(&l.development, "development", false, "human-readable logs at debug level (the same as --zap-devel)")
}

// setup builds the logger the flags ask for, writing to w, and makes it the
// one logger of the process: controller-runtime's, and klog's, so that
// client-go's own lines (leader election, watches, throttling) come out in
// the same structured form as tailor's instead of as plain text among JSON.
func (l *logFlags) setup(w io.Writer) logr.Logger {
	opts := l.zap
	opts.Development = opts.Development || l.development
	opts.DestWriter = w
	logger := zap.New(zap.UseFlagOptions(&opts))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	return logger
}
