#!/usr/bin/env bash
# The developer's loop: every check that needs no local cluster, cheapest
# first, stopping at the first that fails. Each step prints its name and
# duration; a table of them ends the run. make check runs it with the
# pinned tools (GOLANGCI_LINT, HELM) and the controller tier's binaries
# built or cached; the e2e suite and the benchmarks' recorded ranges are
# make test and .ci/run, which need a cluster or much longer.
#
#   make check                        everything
#   CHECK_FROM=unit make check        resume at a step (after fixing it)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# killtree, for the controller tier started beside the unit steps.
source "${ROOT}/hack/lib.sh"
cd "$ROOT"

GO="${GO:-go}"
: "${GOLANGCI_LINT:?set GOLANGCI_LINT to the pinned golangci-lint (make check does)}"
: "${HELM:?set HELM to the pinned helm (make check does)}"
MAKE="${MAKE:-make}"
# No step may reach a cluster: with TAILOR_KUBECONFIG set, test/oracle
# would send its cases to one.
unset TAILOR_KUBECONFIG

# Every Go module: bench/ has its own go.mod, so ./... from the root never
# reaches it.
MODULES=(. bench)
# The build tags the repository's files use; no file is excluded by a tag,
# so linting with all of them covers every file once. golangci-lint's govet
# runs go vet's analyzers (the printf, copylocks, appends, assign and tests
# checks were seen to fire alike), so go vet is not run again: on the
# gate's 2 cores it cost 138 s of type-checking beside the e2e phases.
TAGS=e2e,controller

names=()
times=()
cpus=()
step_from="${CHECK_FROM:-}"
started=$SECONDS

# children_cpu: sets child_cpu to the CPU seconds (user and system) of
# this script's finished children so far. Beside the e2e phases check
# shares two cores with the cluster, so a step's wall time says more of the
# others' load than of its own cost; its CPU time says what the step
# costs. times runs in this shell, not a subshell: a subshell's children
# are not this shell's.
child_cpu=0
cpu_file=$(mktemp)
children_cpu() {
  times >"$cpu_file"
  child_cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$cpu_file")
}

table() {
  local i
  # The controller tier's CPU is in the row of the step it ended beside.
  printf '\n%-22s %8s %8s\n' step seconds "cpu s"
  for i in "${!names[@]}"; do printf '%-22s %8s %8s\n' "${names[$i]}" "${times[$i]}" "${cpus[$i]}"; done
  children_cpu
  printf '%-22s %8s %8s\n' total "$((SECONDS - started))" "$child_cpu"
}

# step NAME CMD...: runs CMD, timed; a failure ends the run with NAME.
step() {
  local name=$1 t0=$SECONDS rc=0 c0
  shift
  if [[ -n "$step_from" && "$step_from" != "$name" ]]; then
    return 0
  fi
  step_from=""
  printf '\n==> %s\n' "$name"
  children_cpu
  c0=$child_cpu
  "$@" || rc=$?
  children_cpu
  names+=("$name")
  times+=("$((SECONDS - t0))")
  cpus+=("$((child_cpu - c0))")
  printf '<== %s: %ss (%ss of CPU)\n' "$name" "$((SECONDS - t0))" "${cpus[-1]}"
  if [[ $rc -ne 0 ]]; then
    table
    printf '\ncheck FAILED at step %s (exit %d); resume with CHECK_FROM=%s make check\n' "$name" "$rc" "$name" >&2
    exit "$rc"
  fi
}

in_modules() {
  local m
  for m in "${MODULES[@]}"; do (cd "$m" && "$@") || return; done
}

gofmt_clean() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go'))
  [[ -z "$unformatted" ]] && return
  echo "gofmt needed:"
  echo "$unformatted"
  return 1
}

# The same four values verify-deploy lints: the defaults and each optional part.
helm_lint() {
  "$HELM" lint --strict --quiet deploy/helm/tailor &&
    "$HELM" lint --strict --quiet deploy/helm/tailor --set metricsSource=metrics-server,evictions.enabled=true &&
    "$HELM" lint --strict --quiet deploy/helm/tailor --set metricsSource=prometheus,leaderElection.enabled=false &&
    "$HELM" lint --strict --quiet deploy/helm/tailor --set agent.enabled=true,shards=2
}

# Unit tests of the root module, test/deploy aside (its own step below).
# -race everywhere in this script, so each package compiles once for the
# tests, the benchmarks and the render tests alike. Each benchmark runs
# once too (-benchtime 1x, under -race), in the tests' own binary: a smoke
# run, not a measurement, so that one that no longer compiles or panics
# fails here; the figures it prints mean nothing. A step of their own
# linked every benchmark's package a second time.
unit_root() {
  local pkgs
  pkgs=$("$GO" list ./... | grep -v '/test/deploy$')
  # shellcheck disable=SC2086
  "$GO" test -race -count=1 -bench . -benchtime 1x $pkgs
}

# What make release builds, checked by test/release: the Linux platforms
# only (the image's two; darwin cross-builds the same code), into a
# temporary directory, under a fixed version. The directory outlives the
# step: the controller step dry-run applies its packaged chart
# (TestReleasedChartInstalls); the script's EXIT trap removes it.
RELEASE_VERSION=v0.0.0-check
RELEASE_DIST=$(mktemp -d)
controller_pid=""
controller_started=0
controller_log=$(mktemp)
cleanup() {
  if [[ -n "$controller_pid" ]] && kill -0 "$controller_pid" 2>/dev/null; then killtree "$controller_pid"; fi
  rm -rf "$RELEASE_DIST" "$controller_log" "$cpu_file"
}
trap cleanup EXIT
release_check() {
  local platforms="linux/amd64 linux/arm64"
  "$MAKE" --no-print-directory release DIST="$RELEASE_DIST" VERSION="$RELEASE_VERSION" RELEASE_PLATFORMS="$platforms" >/dev/null &&
    TAILOR_HELM="$HELM" TAILOR_RELEASE_DIST="$RELEASE_DIST" TAILOR_RELEASE_VERSION="$RELEASE_VERSION" TAILOR_RELEASE_PLATFORMS="$platforms" \
      "$GO" test -count=1 ./test/release
}

# The controller tier, with the release step's chart when that step ran
# (CHECK_FROM=controller skips it, and TestReleasedChartInstalls says so).
controller_check() {
  if [[ -f "$RELEASE_DIST/SHA256SUMS" ]]; then
    TAILOR_RELEASE_DIST="$RELEASE_DIST" TAILOR_RELEASE_VERSION="$RELEASE_VERSION" "$MAKE" --no-print-directory controller
  else
    "$MAKE" --no-print-directory controller
  fi
}

# The controller tier spends much of its time waiting on its apiserver and
# etcd (every write fsynced), the unit steps on the CPU: it runs beside
# them, from right after the release step (whose chart it installs), its
# output kept apart and printed in its own step at the end. Started only
# when every step from here runs (not with CHECK_FROM=unit, say); its step
# runs it then.
start_controller() {
  [[ -z "$step_from" ]] || return 0
  printf '\n==> controller (started beside the steps below; its output follows in its own step)\n'
  controller_started=$SECONDS
  # Its CPU time is said by its own subshell: bash reaps a background
  # job when it ends, so the steps' accounting counts it in whichever step
  # was running then (the unit step, as a rule).
  (
    rc=0
    controller_check || rc=$?
    # Its own file: the steps' accounting uses cpu_file meanwhile.
    cpu_file=$(mktemp)
    children_cpu
    rm -f "$cpu_file"
    echo "controller tier: ${child_cpu}s of CPU"
    exit "$rc"
  ) >"$controller_log" 2>&1 &
  controller_pid=$!
}
controller_result() {
  if [[ -z "$controller_pid" ]]; then
    controller_check
    return
  fi
  local rc=0
  wait "$controller_pid" || rc=$?
  controller_pid=""
  cat "$controller_log"
  printf 'controller tier: %ss from its start beside the unit steps (this step counts only the wait for it)\n' "$((SECONDS - controller_started))"
  return "$rc"
}

step gofmt gofmt_clean
step verify-generated "$MAKE" --no-print-directory verify-generated
step golangci-lint in_modules "$GOLANGCI_LINT" run --allow-parallel-runners --build-tags "$TAGS" ./...
step helm-lint helm_lint
step release release_check
start_controller
step unit unit_root
step unit-bench-module bash -c 'cd bench && "$0" test -race -count=1 -bench . -benchtime 1x ./...' "$GO"
# Helm and kustomize renders, no cluster: test/deploy without the e2e tag.
step deploy-render env TAILOR_HELM="$HELM" "$GO" test -race -count=1 ./test/deploy
step controller controller_result
if [[ -n "$step_from" ]]; then
  echo "CHECK_FROM=$step_from names no step" >&2
  exit 2
fi
table
echo "check passed"
