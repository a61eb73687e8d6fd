#!/usr/bin/env bash
# Builds the local cluster's images without a registry: static Go binaries
# (and busybox for a shell) laid out as a root filesystem, packed as a
# docker-archive tar that `ctr images import` accepts.
#
#   hack/images.sh build    (re)build every image tar into the cache
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# pack NAME REF ROOTFS ENTRYPOINT_JSON
pack() {
  local name=$1 ref=$2 rootfs=$3 entrypoint=$4
  local work; work=$(mktemp -d)
  # Fixed order, owner and times: the same inputs give the same digests.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$work/layer.tar" .
  local diffid; diffid=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  mkdir -p "$work/$diffid"; mv "$work/layer.tar" "$work/$diffid/layer.tar"
  printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":%s,"Env":["PATH=/bin:/usr/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entrypoint" "$diffid" > "$work/config.json"
  local cfg; cfg=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  mv "$work/config.json" "$work/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$ref" "$diffid" > "$work/manifest.json"
  mkdir -p "$IMAGES_DIR"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -cf "$IMAGES_DIR/$name.tar.tmp" .
  mv "$IMAGES_DIR/$name.tar.tmp" "$IMAGES_DIR/$name.tar"
  echo "$ref" > "$IMAGES_DIR/$name.name"
  rm -rf "$work"
}

gobin() { # pkg out
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$2" "$1")
}

build() {
  local work; work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  chmod 755 "$work"

  mkdir -p -m 755 "$work/pause"
  gobin ./test/images/pause "$work/pause/pause"
  pack pause "${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}" "$work/pause" '["/pause"]'

  # The load generator carries busybox so tests can exec a shell in it.
  mkdir -p -m 755 "$work/loadgen/bin"
  mkdir -p -m 1777 "$work/loadgen/tmp"
  gobin ./test/images/loadgen "$work/loadgen/bin/loadgen"
  cp /bin/busybox "$work/loadgen/bin/busybox"
  local app
  for app in sh cat sleep ls echo wget head grep env dd true; do ln -s busybox "$work/loadgen/bin/$app"; done
  pack loadgen "${LOADGEN_IMAGE:-tailor.local/loadgen:dev}" "$work/loadgen" '["/bin/loadgen"]'
  # tailor itself, for the install manifests (config/, deploy/helm): push the
  # tar to a registry with any OCI tool, or import it on a node with ctr.
  # The same root filesystem as the release image (hack/release.sh): the
  # CA bundle, and the non-root user the manifests run it as.
  mkdir -p -m 755 "$work/tailor/etc/ssl/certs"
  gobin ./cmd/tailor "$work/tailor/tailor"
  install -m 644 /etc/ssl/certs/ca-certificates.crt "$work/tailor/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$work/tailor/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$work/tailor/etc/group"
  chmod 644 "$work/tailor/etc/passwd" "$work/tailor/etc/group"
  pack tailor "${TAILOR_IMAGE:-ghcr.io/tailorhq/tailor:v0.1.0}" "$work/tailor" '["/tailor"]'
  log "images built in ${IMAGES_DIR}"
}

case "${1:-}" in
  build) build ;;
  # Sourced by hack/apps.sh for pack and gobin.
  lib) ;;
  *) echo "usage: $0 build" >&2; exit 2 ;;
esac
