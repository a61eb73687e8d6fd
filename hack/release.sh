#!/usr/bin/env bash
# Builds everything a tailor release ships, into DIST (make release runs it):
#
#   tailor-VERSION-OS-ARCH.tar.gz   the CLI and manager for each platform, with
#                                   its kubectl plugin links, LICENSE, README.md
#                                   and CHANGELOG.md
#   tailor-VERSION-image.oci.tar    the container image for linux/amd64 and
#                                   linux/arm64 as one OCI image index (push it
#                                   with any OCI tool: skopeo copy
#                                   oci-archive:... docker://REGISTRY/tailor:VERSION;
#                                   ctr images import takes it as it is)
#   tailor-CHART_VERSION.tgz        the Helm chart, whose appVersion (the image
#                                   tag it installs) is VERSION
#   tailor.krew.yaml                the krew plugin manifest (kubectl krew
#                                   install --manifest=tailor.krew.yaml
#                                   --archive=...), each platform's sha256 in it
#   tailor-VERSION.sbom.cdx.json    the CycloneDX SBOM of the modules linked in
#   SHA256SUMS                      of all of the above
#
# Inputs (the Makefile sets them): VERSION COMMIT DIST GO HELM PLATFORMS
# IMAGE_PLATFORMS IMAGE_REPOSITORY CYCLONEDX_VERSION.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${VERSION:?VERSION is required (make release sets it from git describe)}"
: "${DIST:=dist}" "${GO:=go}" "${HELM:=helm}"
: "${PLATFORMS:=linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
: "${IMAGE_PLATFORMS:=linux/amd64 linux/arm64}"
: "${IMAGE_REPOSITORY:=ghcr.io/tailorhq/tailor}"
: "${CYCLONEDX_VERSION:=v1.10.0}"
: "${COMMIT:=}"
LDFLAGS="-X github.com/tailorhq/tailor/internal/cli/buildinfo.version=${VERSION} -X github.com/tailorhq/tailor/internal/cli/buildinfo.commit=${COMMIT} -s -w"
# The image runs as this user and group (the distroless "nonroot" ids, which
# the Helm chart's and kustomize's securityContext name).
NONROOT=65532

CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
[[ -s "$CA_BUNDLE" ]] || { echo "release: no CA bundle at $CA_BUNDLE for the image (apt-get install ca-certificates)" >&2; exit 1; }
case "$DIST" in /*) ;; *) DIST="$ROOT/$DIST" ;; esac
rm -rf "$DIST" && mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gobuild() { # os arch out
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=$1 GOARCH=$2 "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$3" ./cmd/tailor)
}

# ---------------------------------------------------------------- archives
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  name="tailor-${VERSION}-${os}-${arch}"
  mkdir -p "$work/$name"
  gobuild "$os" "$arch" "$work/$name/tailor"
  ln -s tailor "$work/$name/kubectl-tailor"
  ln -s tailor "$work/$name/kubectl_complete-tailor"
  cp "$ROOT/LICENSE" "$ROOT/README.md" "$ROOT/CHANGELOG.md" "$work/$name/"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -czf "$DIST/$name.tar.gz" "$name"
done

# ---------------------------------------------------------------- image
# An OCI image layout, one manifest per platform under one index: each
# platform's single layer holds /tailor, the CA bundle (a Prometheus or
# metrics source behind HTTPS is verified against it) and /etc/passwd and
# /etc/group naming the non-root user it runs as.
oci="$work/oci"
mkdir -p "$oci/blobs/sha256"
blob() { # file media-type -> prints a descriptor's digest and size, stores the blob
  local d; d=$(sha256sum "$1" | cut -d' ' -f1)
  cp "$1" "$oci/blobs/sha256/$d"
  echo "$d $(stat -c %s "$1")"
}
manifests=""
for p in $IMAGE_PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  rootfs="$work/rootfs-$arch"
  mkdir -p -m 755 "$rootfs/etc/ssl/certs" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  gobuild "$os" "$arch" "$rootfs/tailor"
  cp "$CA_BUNDLE" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n' $NONROOT $NONROOT > "$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%d:\n' $NONROOT > "$rootfs/etc/group"
  chmod 644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$work/layer-$arch.tar" .
  read -r ldigest lsize < <(blob "$work/layer-$arch.tar")
  printf '{"architecture":"%s","os":"%s","created":"1970-01-01T00:00:00Z","config":{"User":"%d:%d","Entrypoint":["/tailor"],"Env":["PATH=/","SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],"WorkingDir":"/","Labels":{"org.opencontainers.image.version":"%s","org.opencontainers.image.revision":"%s","org.opencontainers.image.source":"https://github.com/tailorhq/tailor","org.opencontainers.image.licenses":"Apache-2.0"}},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$arch" "$os" $NONROOT $NONROOT "$VERSION" "$COMMIT" "$ldigest" > "$work/config-$arch.json"
  read -r cdigest csize < <(blob "$work/config-$arch.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
    "$cdigest" "$csize" "$ldigest" "$lsize" > "$work/manifest-$arch.json"
  read -r mdigest msize < <(blob "$work/manifest-$arch.json")
  manifests+="${manifests:+,}{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:${mdigest}\",\"size\":${msize},\"platform\":{\"architecture\":\"${arch}\",\"os\":\"${os}\"}}"
done
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$manifests" > "$work/index-inner.json"
read -r idigest isize < <(blob "$work/index-inner.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s:%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$idigest" "$isize" "$IMAGE_REPOSITORY" "$VERSION" "$VERSION" > "$oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$oci/oci-layout"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$oci" -cf "$DIST/tailor-${VERSION}-image.oci.tar" .

# ---------------------------------------------------------------- chart
# A chart version must be SemVer: a tag's, or 0.0.0-<describe> between tags.
chart_version=${VERSION#v}
if ! [[ "$chart_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then chart_version="0.0.0-${VERSION}"; fi
"$HELM" package "$ROOT/deploy/helm/tailor" --version "$chart_version" --app-version "$VERSION" -d "$DIST" >/dev/null

# ---------------------------------------------------------------- krew
{
  cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: tailor
spec:
  version: ${VERSION}
  homepage: https://github.com/tailorhq/tailor
  shortDescription: Right-size running pods in place
  description: |
    tailor resizes pods' CPU and memory in place through the pods/resize
    subresource, predicts what Kubernetes will do with a resize before it is
    sent, and reports requests against what workloads use.
  platforms:
YAML
  for p in $PLATFORMS; do
    os=${p%/*} arch=${p#*/}
    name="tailor-${VERSION}-${os}-${arch}"
    cat <<YAML
  - selector:
      matchLabels:
        os: ${os}
        arch: ${arch}
    uri: https://github.com/tailorhq/tailor/releases/download/${VERSION}/${name}.tar.gz
    sha256: $(sha256sum "$DIST/$name.tar.gz" | cut -d' ' -f1)
    files:
    - from: ${name}/tailor
      to: .
    - from: ${name}/LICENSE
      to: .
    bin: tailor
YAML
  done
} > "$DIST/tailor.krew.yaml"

# ---------------------------------------------------------------- SBOM
# Read from the linux/amd64 binary's own build information: the modules
# actually linked in, at the versions linked.
gobuild linux amd64 "$work/tailor-sbom"
(cd "$ROOT" && "$GO" run "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@${CYCLONEDX_VERSION}" bin -json \
  -version "$VERSION" -output "$DIST/tailor-${VERSION}.sbom.cdx.json" "$work/tailor-sbom")

(cd "$DIST" && sha256sum -- *.tar.gz *.oci.tar *.tgz tailor.krew.yaml *.sbom.cdx.json > SHA256SUMS)
echo "release ${VERSION}: $(ls "$DIST" | tr '\n' ' ')"
