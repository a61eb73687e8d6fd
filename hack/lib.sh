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
