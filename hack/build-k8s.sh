#!/usr/bin/env bash
# Builds kube-apiserver, kubelet, kube-scheduler, kube-controller-manager and
# kubectl for K8S_VERSION, and etcd for ETCD_VERSION, from the Go module proxy.
# Skips every binary that is already in the cache.
#
#   hack/build-k8s.sh                          everything the local cluster runs
#   hack/build-k8s.sh etcd kube-apiserver      only these (the controller tests)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ALL_K8S_CMDS=(kube-apiserver kubelet kube-scheduler kube-controller-manager kubectl)
K8S_CMDS=()
WANT_ETCD=0
if [[ $# -eq 0 ]]; then
  K8S_CMDS=("${ALL_K8S_CMDS[@]}")
  WANT_ETCD=1
fi
for arg in "$@"; do
  case " etcd ${ALL_K8S_CMDS[*]} " in
    *" ${arg} "*) ;;
    *) die "unknown binary ${arg}: choose from etcd ${ALL_K8S_CMDS[*]}" ;;
  esac
  if [[ "$arg" == etcd ]]; then WANT_ETCD=1; else K8S_CMDS+=("$arg"); fi
done

build_kubernetes() {
  [[ ${#K8S_CMDS[@]} -gt 0 ]] || return 0
  local missing=()
  for c in "${K8S_CMDS[@]}"; do [[ -x "${K8S_BIN}/${c}" ]] || missing+=("$c"); done
  if [[ ${#missing[@]} -eq 0 ]]; then log "kubernetes ${K8S_VERSION}: binaries cached in ${K8S_BIN}"; return; fi

  local staging="v0.${K8S_VERSION#v1.}"
  local wrap="${TAILOR_CACHE}/kubernetes/${K8S_VERSION}/src"
  mkdir -p "$wrap" "$K8S_BIN"
  log "kubernetes ${K8S_VERSION}: building ${missing[*]} (cold build takes several minutes)"

  # k8s.io/kubernetes is not meant to be a dependency: its go.mod points every
  # k8s.io/<staging> module at ./staging. The wrapper replaces each with the
  # published v0.X.Y of the same release, read from that go.mod so the list
  # never drifts.
  if [[ ! -f "$wrap/go.sum" ]]; then
    local gomod
    gomod=$(cd "$wrap" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
    [[ -f "$gomod" ]] || die "could not download k8s.io/kubernetes@${K8S_VERSION} from the module proxy"
    local goversion
    goversion=$(sed -n 's/^go \(.*\)/\1/p' "$gomod")
    {
      echo "module tailor.local/k8s-build"
      echo
      echo "go ${goversion}"
      echo
      echo "require k8s.io/kubernetes ${K8S_VERSION}"
      echo
      echo "replace ("
      sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"${staging}"'#p' "$gomod"
      echo ")"
    } > "$wrap/go.mod"
    log "kubernetes ${K8S_VERSION}: $(grep -c '=>' "$wrap/go.mod") staging modules replaced with ${staging}"
    (cd "$wrap" && GOFLAGS=-mod=mod go mod download all >/dev/null 2>&1 || true)
  fi

  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(minor_of "$K8S_VERSION") -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  for c in "${missing[@]}"; do
    log "kubernetes ${K8S_VERSION}: go build ${c}"
    (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "${K8S_BIN}/${c}.tmp" "k8s.io/kubernetes/cmd/${c}")
    mv "${K8S_BIN}/${c}.tmp" "${K8S_BIN}/${c}"
  done
}

build_etcd() {
  if [[ -x "${ETCD_BIN}/etcd" ]]; then log "etcd ${ETCD_VERSION}: cached in ${ETCD_BIN}"; return; fi
  local wrap="${TAILOR_CACHE}/etcd/${ETCD_VERSION}/src"
  mkdir -p "$wrap" "$ETCD_BIN"
  log "etcd ${ETCD_VERSION}: building"
  # A wrapper module, because etcd's own go.mod uses replace directives that
  # `go install pkg@version` refuses.
  if [[ ! -f "$wrap/go.mod" ]]; then
    printf 'module tailor.local/etcd-build\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > "$wrap/go.mod"
  fi
  (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${ETCD_BIN}/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "${ETCD_BIN}/etcd.tmp" "${ETCD_BIN}/etcd"
}

if [[ "$WANT_ETCD" -eq 1 ]]; then build_etcd; fi
build_kubernetes
