#!/usr/bin/env bash
# Prometheus for the local cluster: Debian's package, run as a host process
# that scrapes the kubelet's cAdvisor endpoint every 5s, so
# tailor's Prometheus source can be tested against real series, and the pods
# a test lists in ${PROM_DIR}/targets/ (file_sd). Of the kubelet, only
# /metrics/cadvisor is scraped: /metrics/resource repeats
# container_cpu_usage_seconds_total and container_memory_working_set_bytes
# under the same labels, and every sum() would count them twice (tailor's
# kubelet source reads /metrics/resource directly).
#
#   hack/addons/prometheus.sh up       install (apt, once), configure, start, wait for the targets
#   hack/addons/prometheus.sh down     stop and remove its config and data
#   hack/addons/prometheus.sh install  only install (the scale benchmark runs its own)
#
# The URL is http://127.0.0.1:9090 (PROMETHEUS_PORT to change it).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PROM_DIR="${TAILOR_DEV_DIR}/prometheus"
PROM_PORT="${PROMETHEUS_PORT:-9090}"
# Not in cluster.sh's run/ directory, which `cluster.sh down` deletes.
PIDFILE="${PROM_DIR}/prometheus.pid"
SCRAPE_INTERVAL="${PROMETHEUS_SCRAPE_INTERVAL:-5s}"


install() {
  if ! command -v prometheus >/dev/null; then
    log "installing Debian's prometheus package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  # The package's own service would hold port 9090 with its own config.
  if command -v systemctl >/dev/null && systemctl is-active -q prometheus 2>/dev/null; then
    systemctl stop prometheus || true
    systemctl disable prometheus 2>/dev/null || true
  fi
}

config() { # node-ip
  local tls="
  scheme: https
  tls_config:
    ca_file: ${PKI_DIR}/ca.crt
    cert_file: ${PKI_DIR}/apiserver-kubelet-client.crt
    key_file: ${PKI_DIR}/apiserver-kubelet-client.key
    # The kubelet serves a self-signed certificate.
    insecure_skip_verify: true
  static_configs:
  - targets: ['$1:10250']
    labels: {node: ${NODE_NAME}}"
  cat <<EOF
global:
  scrape_interval: ${SCRAPE_INTERVAL}
  scrape_timeout: 4s
scrape_configs:
- job_name: kubelet-cadvisor
  metrics_path: /metrics/cadvisor
  # cAdvisor's series carry their own namespace/pod/container labels.
  honor_labels: true${tls}
# Pods the tests name: each writes a file_sd file (targets with their
# namespace and pod labels) into the targets directory, for what a workload
# exports of itself, such as the load generator's request latency that a
# canary's query guardrail reads (Debian's build has no kubernetes_sd).
- job_name: pods
  file_sd_configs:
  - files: ['${PROM_DIR}/targets/*.json']
    refresh_interval: 5s
EOF
}

running() { pid_alive prometheus "$PIDFILE"; }

# targets_up asks the live scrape loop, not a query: after a restart, the
# TSDB replays an `up` of 1 from before it that a query would still return.
targets_up() {
  curl -fsS 2>/dev/null "http://127.0.0.1:${PROM_PORT}/api/v1/targets?state=active" |
    grep -q '"scrapePool":"kubelet-cadvisor".*"health":"up"'
}

cmd_up() {
  local t0=$SECONDS
  install
  mkdir -p "$PROM_DIR/data" "$PROM_DIR/targets" "$LOG_DIR"
  config "$(node_ip)" > "${PROM_DIR}/prometheus.yml"
  promtool check config "${PROM_DIR}/prometheus.yml" >/dev/null || die "generated ${PROM_DIR}/prometheus.yml is invalid"
  if running; then
    kill -HUP "$(cat "$PIDFILE")"   # pick up a changed node IP
  else
    log "starting prometheus on 127.0.0.1:${PROM_PORT}"
    # Like the cluster's daemons (hack/cluster.sh, start): outliving this
    # shell, holding none of its descriptors.
    setsid prometheus --config.file "${PROM_DIR}/prometheus.yml" \
      --storage.tsdb.path "${PROM_DIR}/data" --storage.tsdb.retention.time 6h \
      --web.listen-address "127.0.0.1:${PROM_PORT}" \
      >>"${LOG_DIR}/prometheus.log" 2>&1 </dev/null 9>&- &
    echo $! > "$PIDFILE"
  fi
  local deadline=$((SECONDS + 90))
  until targets_up; do
    running || die "prometheus exited; see ${LOG_DIR}/prometheus.log"
    (( SECONDS < deadline )) || die "timed out waiting for the kubelet targets to be up; see http://127.0.0.1:${PROM_PORT}/targets"
    sleep 1
  done
  log "prometheus up in $((SECONDS - t0))s: http://127.0.0.1:${PROM_PORT}, kubelet targets up"
}

cmd_down() {
  stop_pid prometheus "$PIDFILE" 20
  rm -rf "$PROM_DIR"
  log "prometheus down"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  install) install ;;
  *) echo "usage: $0 up|down|install" >&2; exit 2 ;;
esac
