# tailor's entry points. The first two are the ones the README opens with.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

GO            ?= go
BIN           := bin
GOLANGCI_VERSION ?= v2.15.0
TAILOR_CACHE  ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tailor
TOOLS_BIN     := $(TAILOR_CACHE)/tools/bin
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_VERSION)
E2E_TIMEOUT   ?= 40m

.PHONY: demo test unit lint e2e build cluster-up cluster-down cluster-status bench bench-e2e generate verify-generated clean

## demo: local cluster + a workload resized in place, end to end.
demo: build
	hack/demo.sh

## test: lint, unit tests, then the e2e suite on a real local cluster.
test: lint unit e2e

build:
	$(GO) build -o $(BIN)/tailor ./cmd/tailor
	ln -sf tailor $(BIN)/kubectl-tailor

unit:
	$(GO) test -race -count=1 ./...

$(GOLANGCI_LINT):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv $(TOOLS_BIN)/golangci-lint $(GOLANGCI_LINT)

lint: $(GOLANGCI_LINT)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$unformatted" ]]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...

## e2e: brings the cluster up (building what is missing), runs the suite, tears down.
e2e: build
	hack/e2e.sh

## bench: replay a month of real VM usage (../shared/traces beside the clone)
## through tailor, the upstream VPA recommender, the seeds' rule and an oracle;
## prints the comparison, writes charts to bench/out, checks bench/ranges.json.
## BENCH_FLAGS=--curve adds the trade-off sweep behind docs/benchmark-tradeoff.svg;
## BENCH_TRACES is relative to bench/ (or absolute).
BENCH_TRACES ?= ../../shared/traces/bitbrains-rnd/2013-7
BENCH_FLAGS   ?=
bench:
	cd bench && $(GO) run ./cmd/replay-bench --traces $(BENCH_TRACES) --ranges ranges.json --out out $(BENCH_FLAGS)

cluster-up:
	hack/cluster.sh up
cluster-down:
	hack/cluster.sh down
cluster-status:
	hack/cluster.sh status

clean:
	rm -rf $(BIN)
