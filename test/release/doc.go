// Package release checks what `make release` builds (hack/release.sh): the
// per-platform archives, the multi-platform OCI image, the packaged Helm
// chart, the krew manifest, the SBOM and SHA256SUMS. It reads a built
// release directory named by TAILOR_RELEASE_DIST and skips without one;
// hack/check.sh builds one and runs it.
package release
