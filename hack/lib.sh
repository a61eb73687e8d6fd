#!/usr/bin/env bash
# Shared settings for the local-cluster scripts. Sourced, never run.
# Everything is overridable from the environment so CI, the demo and a
# developer's shell agree on one set of paths.

set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"

# Binaries are cached per version outside the work tree so a fresh clone on a
# machine that has built them once does not rebuild (cold build ~8-12 min).
TAILOR_CACHE="${TAILOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tailor}"
K8S_BIN="${TAILOR_CACHE}/kubernetes/${K8S_VERSION}/bin"
ETCD_BIN="${TAILOR_CACHE}/etcd/${ETCD_VERSION}/bin"
IMAGES_DIR="${TAILOR_CACHE}/images"
# The real applications' images (hack/apps.sh), which only the apps phase runs.
IMAGES_APPS_DIR="${TAILOR_CACHE}/images-apps"

# Cluster state: one directory holds certs, configs, data and logs, so `down`
# knows exactly what to remove and a person knows where to look.
TAILOR_DEV_DIR="${TAILOR_DEV_DIR:-/var/lib/tailor-dev}"
LOG_DIR="${TAILOR_DEV_DIR}/logs"
PKI_DIR="${TAILOR_DEV_DIR}/pki"
KUBECONFIG_PATH="${TAILOR_DEV_DIR}/admin.kubeconfig"

NODE_NAME="${NODE_NAME:-tailor-dev}"
POD_CIDR="${POD_CIDR:-10.244.0.0/24}"
SERVICE_CIDR="${SERVICE_CIDR:-10.96.0.0/24}"
APISERVER_PORT="${APISERVER_PORT:-6443}"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# pid_alive NAME PIDFILE: the pid file names a live process that is NAME,
# not another that took its pid after the machine restarted (pid files
# outlive a restart; the processes do not).
pid_alive() {
  local pid
  [[ -f "$2" ]] && pid=$(cat "$2") && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -q -- "$1"
}

# stop_pid NAME PIDFILE [SECONDS]: stops the process the pid file names if
# it is NAME (SIGTERM, then SIGKILL after SECONDS, 10 by default), and
# removes the pid file either way.
stop_pid() {
  local name=$1 f=$2 tries=$(( ${3:-10} * 5 )) pid
  [[ -f "$f" ]] || return 0
  pid=$(cat "$f")
  if pid_alive "$name" "$f"; then
    log "stopping ${name}"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 "$tries"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# minor_of v1.37.1 -> 37
minor_of() { local v="${1#v}"; v="${v#*.}"; echo "${v%%.*}"; }

# node_ip is the IPv4 address the node registers: the default route's device,
# else the first global address.
node_ip() {
  local dev ip
  dev=$(ip -4 route show default | awk '{for (i=1;i<NF;i++) if ($i=="dev") {print $(i+1); exit}}')
  [[ -n "$dev" ]] && ip=$(ip -4 -o addr show dev "$dev" scope global | awk '{split($4,a,"/"); print a[1]; exit}')
  [[ -n "${ip:-}" ]] || ip=$(ip -4 -o addr show scope global | awk '{split($4,a,"/"); print a[1]; exit}')
  [[ -n "${ip:-}" ]] || die "no global IPv4 address on this machine to use as the node IP"
  echo "$ip"
}

# mkcert DIR NAME CN [O] [SANS]: DIR/NAME.key and DIR/NAME.crt signed by the
# cluster CA in PKI_DIR; with SANS a serving certificate too. Kept if present.
mkcert() {
  local dir=$1 name=$2 cn=$3 o=${4:-} sans=${5:-}
  [[ -f "${dir}/${name}.crt" ]] && return
  mkdir -p "$dir"
  local subj="/CN=${cn}"; [[ -n "$o" ]] && subj="/O=${o}${subj}"
  openssl genrsa -out "${dir}/${name}.key" 2048 2>/dev/null
  openssl req -new -key "${dir}/${name}.key" -subj "$subj" -out "${dir}/${name}.csr" 2>/dev/null
  local ext="${dir}/${name}.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n "$sans" ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=${sans}"
    else echo "extendedKeyUsage=clientAuth"; fi
  } > "$ext"
  openssl x509 -req -in "${dir}/${name}.csr" -CA "${PKI_DIR}/ca.crt" -CAkey "${PKI_DIR}/ca.key" \
    -CAcreateserial -days 3650 -extfile "$ext" -out "${dir}/${name}.crt" 2>/dev/null
  rm -f "${dir}/${name}.csr" "$ext"
}

# write_kubeconfig PATH USER CERT KEY: a kubeconfig for the local apiserver.
write_kubeconfig() {
  local path=$1 user=$2 cert=$3 key=$4
  cat > "$path" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tailor-dev
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    certificate-authority: ${PKI_DIR}/ca.crt
users:
- name: ${user}
  user:
    client-certificate: ${cert}
    client-key: ${key}
contexts:
- name: tailor-dev
  context: {cluster: tailor-dev, user: ${user}}
current-context: tailor-dev
EOF
}

# killtree PID: PID and everything it started (make, go test, the test
# binaries, an apiserver and etcd they run).
killtree() {
  local c
  for c in $(pgrep -P "$1"); do killtree "$c"; done
  kill "$1" 2>/dev/null || true
}

# cpu_ticks: the machine's busy and total CPU ticks so far ("BUSY TOTAL"),
# from /proc/stat's first line (idle and iowait are not busy).
cpu_ticks() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}

# timed NAME CMD...: runs CMD, saying when it starts and how it ended after
# how long, and adds "NAME<TAB>SECONDS<TAB>EXIT<TAB>BUSY%" to the file
# TAILOR_TIMINGS names, if any, for the table .ci/run ends with. BUSY% is
# how busy the whole machine's CPUs were meanwhile (whatever ran beside
# the command included): what says whether a phase waits or computes.
timed() {
  local name=$1 start=$SECONDS rc=0 b0 t0 b1 t1
  shift
  read -r b0 t0 < <(cpu_ticks)
  log "== ${name}: started"
  "$@" || rc=$?
  local took=$((SECONDS - start))
  read -r b1 t1 < <(cpu_ticks)
  local busy=$(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))
  if [[ $rc == 0 ]]; then log "== ${name}: passed in ${took}s (CPU ${busy}% busy)"; else log "== ${name}: FAILED (exit ${rc}) after ${took}s"; fi
  if [[ -n "${TAILOR_TIMINGS:-}" ]]; then printf '%s\t%s\t%s\t%s\n' "$name" "$took" "$rc" "$busy" >>"$TAILOR_TIMINGS"; fi
  return "$rc"
}
