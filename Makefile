# tailor's entry points. The first two are the ones the README opens with.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

GO            ?= go
BIN           := bin
GOLANGCI_VERSION ?= v2.15.0
TAILOR_CACHE  ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tailor
TOOLS_BIN     := $(TAILOR_CACHE)/tools/bin
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_VERSION)
# controller-tools v0.23.0 is the newest release; it is built against k8s.io v0.37 and Go 1.26, as tailor is.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# Helm is not in Debian 12: built from the Go module proxy, like the tools above, with
# the link flags Helm's own release build sets (its version, and the Kubernetes version
# that helm lint and helm template assume: 1.37, from its client-go v0.37).
HELM_VERSION  ?= v3.22.0
HELM          := $(TOOLS_BIN)/helm-$(HELM_VERSION)
HELM_LDFLAGS  := -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	$(foreach p,pkg/lint/rules pkg/chartutil,-X helm.sh/helm/v3/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/$(p).k8sVersionMinor=37)
# gotestsum runs the cluster suites: it runs a failed test once more, so
# that hack/e2e.sh can tell a flake from a failure.
GOTESTSUM_VERSION ?= v1.13.0
GOTESTSUM     := $(TOOLS_BIN)/gotestsum-$(GOTESTSUM_VERSION)
TAILOR_KUBECONFIG ?= /var/lib/tailor-dev/admin.kubeconfig

.PHONY: ui demo demo-resize test unit controller lint e2e build install cluster-up cluster-down cluster-status bench bench-scale bench-room bench-e2e soak generate verify-generated verify-deploy clean

## demo: local cluster + the tailor manager autoscaling a workload in place.
demo: build
	hack/demo.sh

## demo-resize: the same cluster, resized by hand with tailor resize.
demo-resize: build
	hack/demo-resize.sh

## test: the whole gate (hack/test.sh): make check, the replay and scale
## benchmarks, then the cluster suites in phases on a real local cluster;
## ends with each phase's time and the tests that flaked.
test:
	hack/test.sh

# tailor version and the bug reports it answers name the build: the tag (or
# commit) and whether the tree had uncommitted changes. Unset outside a git
# checkout; the binary then falls back to what Go itself recorded.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/tailorhq/tailor/internal/cli/buildinfo.version=$(VERSION) \
	-X github.com/tailorhq/tailor/internal/cli/buildinfo.commit=$(COMMIT)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/tailor ./cmd/tailor
	ln -sf tailor $(BIN)/kubectl-tailor
	ln -sf tailor $(BIN)/kubectl_complete-tailor

## release: everything a release ships, into DIST (hack/release.sh says what):
## tailor for each of RELEASE_PLATFORMS stamped as make build stamps it
## (DIST/tailor-VERSION-OS-ARCH.tar.gz), the container image for linux/amd64 and
## linux/arm64 as one OCI archive, the packaged Helm chart, the krew manifest, a
## CycloneDX SBOM and DIST/SHA256SUMS. A tree with uncommitted changes is refused
## (its version ends in -dirty) unless ALLOW_DIRTY=1. test/release checks them.
.PHONY: release
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
DIST ?= dist
release: $(HELM)
	@test -n "$(VERSION)" || { echo "release: no version: build from a git checkout or set VERSION=v0.1.0" >&2; exit 2; }
	@case "$(VERSION)" in *-dirty) test "$(ALLOW_DIRTY)" = 1 || { echo "release: $(VERSION) has uncommitted changes: commit them, or set ALLOW_DIRTY=1" >&2; exit 2; };; esac
	VERSION=$(VERSION) COMMIT=$(COMMIT) DIST=$(DIST) GO=$(GO) HELM=$(HELM) \
		PLATFORMS="$(RELEASE_PLATFORMS)" IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" hack/release.sh

## install: tailor and the kubectl plugin (kubectl tailor ...) into PREFIX/bin, with
## kubectl_complete-tailor, which kubectl 1.26+ runs to complete kubectl tailor.
PREFIX ?= /usr/local
install: build
	install -m 0755 $(BIN)/tailor $(PREFIX)/bin/tailor
	ln -sf tailor $(PREFIX)/bin/kubectl-tailor
	ln -sf tailor $(PREFIX)/bin/kubectl_complete-tailor

unit:
	$(GO) test -race -count=1 ./...

## controller: the controller tier (test/controller): the policy reconciler against
## a real kube-apiserver and etcd (envtest, on random ports: it does not touch the
## local cluster), with a fake clock, a scripted metrics source and a simulated
## kubelet, with -race: reconciles and the informers' event mapping share state.
## And the install manifests on that apiserver: the chart's values cases and
## config/'s overlays (built with the cluster's kubectl), server-side dry run.
## Builds kube-apiserver, etcd and kubectl first when they are not cached.
## CONTROLLER_FLAGS passes go test flags, e.g. CONTROLLER_FLAGS='-run Restart -v'.
## -timeout 30m guards against a hang: beside make check's unit step it took 18.5
## minutes in a CI rehearsal, and 20 ran out once on a machine busier than CI's.
## TAILOR_RELEASE_DIST and TAILOR_RELEASE_VERSION, when set (hack/check.sh sets
## them after its release step), name a make release output whose chart is checked too.
CONTROLLER_FLAGS ?=
controller: $(HELM)
	hack/cluster.sh build etcd kube-apiserver kubectl
	source hack/lib.sh; \
	TEST_ASSET_KUBE_APISERVER="$$K8S_BIN/kube-apiserver" TEST_ASSET_ETCD="$$ETCD_BIN/etcd" \
	TAILOR_HELM=$(HELM) TAILOR_KUBECTL="$$K8S_BIN/kubectl" \
		$(GO) test -race -tags controller -count=1 -timeout 30m $(CONTROLLER_FLAGS) ./test/controller

## oracle: the planner against a real kube-apiserver (test/oracle), here an envtest
## kube-apiserver and etcd on random ports (it does not touch the local cluster):
## its verdicts on generated resizes, under LimitRanges and ResourceQuotas too, and
## the decision's resizes, sent as server-side dry runs. No node: the node-capacity
## cases run only against a cluster (TAILOR_KUBECONFIG, hack/e2e.sh).
## ORACLE_FLAGS passes go test flags, e.g. ORACLE_FLAGS='-run UnderNamespaceRules -v'.
ORACLE_FLAGS ?=
.PHONY: oracle
oracle:
	hack/cluster.sh build etcd kube-apiserver
	source hack/lib.sh; unset TAILOR_KUBECONFIG; \
	TEST_ASSET_KUBE_APISERVER="$$K8S_BIN/kube-apiserver" TEST_ASSET_ETCD="$$ETCD_BIN/etcd" \
		$(GO) test -count=1 $(ORACLE_FLAGS) ./test/oracle

## explore: the decision's property tests on cases drawn from the clock, not the
## gate's fixed seed (TAILOR_PROPERTY_SEED), 10,000 a test (the gate runs 2,000
## under -race): EXPLORE_ROUNDS rounds; a failure prints the seed that replays
## it, which belongs in the test's list of seeds once the bug it found is fixed.
## Every package's: the property tests live beside the code they judge.
EXPLORE_ROUNDS ?= 5
.PHONY: explore
explore:
	for i in $$(seq $(EXPLORE_ROUNDS)); do \
		TAILOR_PROPERTY_SEED=clock $(GO) test -count=1 -run 'Invariants$$|Properties$$|PassTheEngine$$' ./internal/... || exit 1; \
	done

$(GOLANGCI_LINT):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv $(TOOLS_BIN)/golangci-lint $(GOLANGCI_LINT)

$(CONTROLLER_GEN):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(TOOLS_BIN)/controller-gen $(CONTROLLER_GEN)

## generate: deepcopy functions and CRD manifests from the kubebuilder markers in api/,
## the manager's ClusterRoles (what it reads; what it writes; delete on pods,
## to replace a pod it sized that no node has room for) from the rbac markers
## in internal/controller/, internal/dashboard/ and internal/manager/, the
## manager's Role for the agents' TLS (config/components/agent, from
## internal/agentcert/: only installs with the agent have it), and the Helm
## chart's copies of both and of the admission policies. GENERATE_OUT
## redirects all of them (verify-generated uses it); they are committed.
GENERATE_OUT ?= .
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./api/... output:object:dir=$(GENERATE_OUT)/api/v1alpha1
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:dir=$(GENERATE_OUT)/config/crd/bases
	hack/crd-bound-quantities.sh $(GENERATE_OUT)/config/crd/bases/autoscaling.tailor.dev_tailorpolicies.yaml
	$(CONTROLLER_GEN) rbac:roleName=tailor-manager paths="./internal/controller/...;./internal/dashboard/...;./internal/manager/..." output:rbac:dir=$(GENERATE_OUT)/config/rbac
	mkdir -p $(GENERATE_OUT)/config/components/agent
	$(CONTROLLER_GEN) rbac:roleName=tailor-manager-agent-tls paths=./internal/agentcert/... output:rbac:stdout > $(GENERATE_OUT)/config/components/agent/manager_tls_role.yaml
	mkdir -p $(GENERATE_OUT)/deploy/helm/tailor/crds
	cp $(GENERATE_OUT)/config/crd/bases/*.yaml $(GENERATE_OUT)/deploy/helm/tailor/crds/
	mkdir -p $(GENERATE_OUT)/deploy/helm/tailor/files
	cp $(GENERATE_OUT)/config/rbac/role.yaml $(GENERATE_OUT)/deploy/helm/tailor/files/manager-role.yaml
	cp config/components/eviction/recreate_admission.yaml $(GENERATE_OUT)/deploy/helm/tailor/files/recreate-admission.yaml
	cp config/components/admission/admission_policy.yaml $(GENERATE_OUT)/deploy/helm/tailor/files/admission-policy.yaml
	cp config/components/guard/guard_policy.yaml $(GENERATE_OUT)/deploy/helm/tailor/files/guard-policy.yaml

## verify-generated: fails when the committed generated files differ from the types.
verify-generated: $(CONTROLLER_GEN)
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory generate GENERATE_OUT="$$tmp" >/dev/null; \
	diff -ru api/v1alpha1/zz_generated.deepcopy.go "$$tmp/api/v1alpha1/zz_generated.deepcopy.go" && \
	diff -ru config/crd/bases "$$tmp/config/crd/bases" && \
	diff -u config/rbac/role.yaml "$$tmp/config/rbac/role.yaml" && \
	diff -u config/components/agent/manager_tls_role.yaml "$$tmp/config/components/agent/manager_tls_role.yaml" && \
	diff -ru deploy/helm/tailor/crds "$$tmp/deploy/helm/tailor/crds" && \
	diff -u deploy/helm/tailor/files/manager-role.yaml "$$tmp/deploy/helm/tailor/files/manager-role.yaml" && \
	diff -u deploy/helm/tailor/files/recreate-admission.yaml "$$tmp/deploy/helm/tailor/files/recreate-admission.yaml" && \
	diff -u deploy/helm/tailor/files/admission-policy.yaml "$$tmp/deploy/helm/tailor/files/admission-policy.yaml" && \
	diff -u deploy/helm/tailor/files/guard-policy.yaml "$$tmp/deploy/helm/tailor/files/guard-policy.yaml" || { echo "generated files are stale: run make generate and commit the result"; exit 1; }

## ui: vendors the dashboard's chart library (uPlot, pinned with its integrity
## hash in web/package-lock.json) into internal/dashboard/static/vendor, which
## go:embed puts in the binary; committed, so builds need no npm.
UI_VENDOR = internal/dashboard/static/vendor
ui:
	cd web && npm ci --no-audit --no-fund --ignore-scripts
	mkdir -p $(UI_VENDOR)
	cp web/node_modules/uplot/dist/uPlot.iife.min.js web/node_modules/uplot/dist/uPlot.min.css $(UI_VENDOR)/
	cp web/node_modules/uplot/LICENSE $(UI_VENDOR)/uPlot.LICENSE

$(HELM):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(TOOLS_BIN)/helm $(HELM)

## verify-deploy: lints the Helm chart, checks that it and the kustomize install
## (config/default and config/components) render the same roles, and, when
## TAILOR_KUBECONFIG names a cluster's kubeconfig, checks both against its apiserver:
## RBAC applied into a throwaway deploy-* namespace, the rest dry-run, and
## SubjectAccessReviews of what the manager may and may not do (test/deploy).
verify-deploy: $(HELM)
	$(HELM) lint --strict deploy/helm/tailor
	$(HELM) lint --strict deploy/helm/tailor --set metricsSource=metrics-server,evictions.enabled=true
	$(HELM) lint --strict deploy/helm/tailor --set metricsSource=prometheus,leaderElection.enabled=false
	$(HELM) lint --strict deploy/helm/tailor --set agent.enabled=true,shards=2
	TAILOR_HELM=$(HELM) $(GO) test -count=1 ./test/deploy
	@if [[ -f "$(TAILOR_KUBECONFIG)" ]]; then \
		echo "TAILOR_HELM=$(HELM) TAILOR_KUBECONFIG=$(TAILOR_KUBECONFIG) $(GO) test -tags e2e -count=1 ./test/deploy"; \
		TAILOR_HELM=$(HELM) TAILOR_KUBECONFIG=$(TAILOR_KUBECONFIG) $(GO) test -tags e2e -count=1 ./test/deploy; \
	else echo "no kubeconfig at $(TAILOR_KUBECONFIG): skipping the apiserver checks"; fi

lint: $(GOLANGCI_LINT) $(HELM) verify-generated
	$(HELM) lint --strict --quiet deploy/helm/tailor
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$unformatted" ]]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags controller ./test/controller
	$(GOLANGCI_LINT) run --allow-parallel-runners --build-tags e2e,controller ./...

## check: the developer's loop, every check that needs no local cluster, in
## about 5 minutes warm (hack/check.sh): gofmt, generated files,
## golangci-lint (go vet's analyzers among its linters) with every build
## tag, helm lint, the -race unit tests of every module (bench/ included),
## one run of each benchmark, the Helm and kustomize render tests, and the
## controller tier. Prints a timing table.
.PHONY: check
check: $(GOLANGCI_LINT) $(HELM) $(CONTROLLER_GEN)
	GO=$(GO) GOLANGCI_LINT=$(GOLANGCI_LINT) HELM=$(HELM) hack/check.sh

$(GOTESTSUM):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
	mv $(TOOLS_BIN)/gotestsum $(GOTESTSUM)

## e2e: brings the cluster up (building what is missing), runs the cluster
## suites in phases (shared, quiet, apps-check, chaos; E2E_PHASES picks
## some), tears down.
e2e: $(HELM) $(GOTESTSUM)
	TAILOR_HELM=$(HELM) TAILOR_GOTESTSUM=$(GOTESTSUM) TAILOR_E2E_BINARY=$(abspath $(BIN)/tailor) hack/e2e.sh

## e2e-apps: PostgreSQL, Redis and a JVM service (packed from Debian's
## packages by hack/apps.sh) each under a TailorPolicy on the local cluster,
## through idle, load and idle again: raised and lowered in place, never
## restarted or OOM-killed. Minutes of load each, one at a time; make test's
## apps-check phase runs one trial of Redis, PostgreSQL and the JVM side by
## side.
.PHONY: e2e-apps
e2e-apps: $(HELM) $(GOTESTSUM)
	E2E_PHASES=apps TAILOR_HELM=$(HELM) TAILOR_GOTESTSUM=$(GOTESTSUM) TAILOR_E2E_BINARY=$(abspath $(BIN)/tailor) hack/e2e.sh

## soak: one hour (SOAK=1h) of 20 pods replaying the traces under tailor on the
## local cluster, with a chaos event every 4 minutes; prints what it counted
## (test/chaos TestSoak). On demand: not part of make test.
SOAK ?= 1h
soak: build
	hack/cluster.sh up
	TAILOR_SOAK=$(SOAK) TAILOR_KUBECONFIG=$(TAILOR_KUBECONFIG) PATH="$$(source hack/lib.sh && echo $$K8S_BIN):$$PATH" \
		$(GO) test -tags e2e -count=1 -v -timeout 3h -run TestSoak ./test/chaos

## bench: replay a month of real VM usage (../shared/traces beside the clone)
## through tailor, the upstream VPA recommender, the seeds' rule, an oracle and
## hindsight bounds; prints the comparison, memory as Kubernetes charges it
## (requests, OOM kills at the limit, evictions on packed nodes of 64 and 32 GiB) and each
## learning policy on held-out halves, writes charts to bench/out, checks
## bench/ranges.json. BENCH_FLAGS=--curve adds the trade-off sweeps behind
## docs/benchmark-tradeoff.svg and docs/benchmark-evictions-tradeoff.svg, --validate the memory ideas picked on tuning
## halves and scored on held-out ones (docs/benchmark-heldout.svg);
## BENCH_TRACES is relative to bench/ (or absolute).
BENCH_TRACES ?= ../../shared/traces/bitbrains-rnd/2013-7
BENCH_FLAGS   ?=
bench:
	cd bench && $(GO) run ./cmd/replay-bench --traces $(BENCH_TRACES) --ranges ranges.json --out out $(BENCH_FLAGS)

## bench-scale: the manager at scale (issue #10): a real kube-apiserver and etcd on
## random ports (not the local cluster), simulated nodes, pods and kubelets (usage
## pages read on each one's own port, or through the node proxy with
## --sources kubelet-proxy; resizes answered), the manager as its own process.
## Prints the figures, writes bench/out/scale.json (and scale.svg with more than one
## size), checks bench/scale-ranges.json. SCALE=ci (default: 1k pods, 50 nodes, 10
## policies, kubelet source) or SCALE=full (1k to 10k pods, 50 to 500 nodes, 10 to
## 1,000 policies; the smallest also with metrics-server and Prometheus).
## BENCH_SCALE_FLAGS passes more flags (e.g. --sizes, --sources, --keep).
SCALE ?= ci
BENCH_SCALE_FLAGS ?=
bench-scale: build
	hack/cluster.sh build etcd kube-apiserver
	@# The full size (or a --sources naming it) runs a real Prometheus.
	if [ "$(SCALE)" = full ] || echo '$(BENCH_SCALE_FLAGS)' | grep -q prometheus; then hack/addons/prometheus.sh install; fi
	@# A run with VPA (--sources naming vpa) builds its components from the module proxy.
	source hack/lib.sh; vpa=(); \
	if echo '$(BENCH_SCALE_FLAGS)' | grep -q vpa; then hack/addons/vpa.sh build && \
		vpa=(--vpa-bin "$$(hack/addons/vpa.sh bin)" --vpa-crds "$$(hack/addons/vpa.sh crds)"); fi; \
	cd bench && TEST_ASSET_KUBE_APISERVER="$$K8S_BIN/kube-apiserver" TEST_ASSET_ETCD="$$ETCD_BIN/etcd" \
		$(GO) run ./cmd/scale-bench --scale $(SCALE) --tailor ../$(BIN)/tailor --traces $(BENCH_TRACES) \
		--ranges scale-ranges.json --out out "$${vpa[@]}" $(BENCH_SCALE_FLAGS)

## bench-room: what making room in place saves against recreating (issue #37):
## tailor's own sync decisions on a simulated fleet of 200 full nodes with
## pods of mixed priorities, with room made in place and without; prints
## evictions, throttled and down pod-minutes, writes bench/out/room.json,
## checks bench/room-ranges.json. Seconds; no cluster. BENCH_ROOM_FLAGS passes
## more flags (--nodes, --minutes, --seed).
BENCH_ROOM_FLAGS ?=
bench-room:
	cd bench && $(GO) run ./cmd/room-bench --ranges room-ranges.json --out out $(BENCH_ROOM_FLAGS)

cluster-up:
	hack/cluster.sh up
cluster-down:
	hack/cluster.sh down
cluster-status:
	hack/cluster.sh status

clean:
	rm -rf $(BIN)

## bench-e2e: reaction benchmark on the local cluster, per metrics source (the
## node agent included): idle -> full CPU step, and a 50 MiB/s memory ramp;
## the agent's own cost beside 100 containers; a slow starter's time to
## Ready with and without a startup boost; an HPA's replica changes alone and
## beside tailor; and a leader's takeover after a SIGKILL and a SIGTERM (two
## managers run from bin/tailor; BENCH_E2E_TRIALS trials); and the real
## applications (hack/apps.sh: Redis, PostgreSQL, a JVM three ways) through a
## day in minutes at a fixed generous size and under tailor (about 40
## minutes). Checks the medians, percentiles and the applications' peak
## latency and throughput against test/perf/reaction/ranges.json.
BENCH_E2E_TRIALS ?= 5
bench-e2e: build
	hack/cluster.sh up
	hack/apps.sh import
	$(GO) run ./test/perf/reaction --trials $(BENCH_E2E_TRIALS) --takeover-trials $(BENCH_E2E_TRIALS) \
		--tailor-bin $(BIN)/tailor --ranges test/perf/reaction/ranges.json
