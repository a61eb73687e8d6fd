#!/usr/bin/env bash
# Each package under internal/: its non-test lines and the module's
# packages it imports, so the sizes and the direction of the imports can be
# read at a glance (issue #35 wants packages of one concern each, imports
# pointing one way). Generated code counts; tests do not.
#
#   hack/packages.sh            every internal package
#   hack/packages.sh autoscale  those whose path contains "autoscale"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"
MODULE="$($GO list -m)"

$GO list -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}}|{{join .Imports " "}}' ./internal/... |
while IFS='|' read -r pkg dir files imports; do
  [[ -z "${1:-}" || "$pkg" == *"$1"* ]] || continue
  lines=0
  for f in $files; do
    lines=$((lines + $(wc -l <"$dir/$f")))
  done
  own=""
  for i in $imports; do
    [[ "$i" == "$MODULE"/* ]] && own+=" ${i#"$MODULE"/}"
  done
  printf '%6d  %s ->%s\n' "$lines" "${pkg#"$MODULE"/}" "${own:- (none)}"
done
