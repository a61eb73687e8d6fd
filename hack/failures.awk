# Prints, from a `go test -v` log, each failed test's messages under its
# FAIL line, so a CI log kept only by its tail still says why a test failed.
# Its t.Log lines from managerlog_test.go (the manager's own log, many lines
# long) are left out; the full log has them.
function add(line) {
  if (length(line) > 1000) line = substr(line, 1, 1000) "..."
  if (n == max) { for (i = 1; i < max; i++) buf[i] = buf[i + 1]; n-- }
  buf[++n] = line
}
BEGIN { max = 30 }
/^=== RUN   [^\/]+$/ { n = 0; keep = 0; next }
/^=== / { next }
/^--- FAIL: / { print; for (i = 1; i <= n; i++) print buf[i]; n = 0; keep = 0; next }
/^ +--- FAIL: / { print; next }
/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / { keep = ($0 !~ /managerlog_test\.go:/); if (keep) add($0); next }
/^        / { if (keep) add($0); next }
{ keep = 0 }
