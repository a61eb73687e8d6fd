#!/usr/bin/env bash
# Adds maxLength: 64 to every resource.Quantity schema in the CRD files given
# (the Makefile gives the ones with quantities: TailorPolicy's).
#
# Why: the CEL rules that compare quantities (minAllowed <= maxAllowed) cost,
# by the apiserver's estimate, in proportion to the longest string a value can
# be. A quantity is int-or-string with no maxLength, so the estimate is the
# whole request size and the apiserver refuses the CRD. The apiserver accepts
# maxLength on an int-or-string schema, but controller-gen has no marker for
# the values of a map (ResourceList), so it is added here, as part of
# `make generate`, and checked by `make verify-generated`. No real quantity
# comes near 64 characters.
set -euo pipefail
for f in "$@"; do
  sed -i -E 's/^( *)(pattern: \^\(\\\+\|-\)\?\(\(\[0-9\]\+.*)$/\1maxLength: 64\n\1\2/' "$f"
  grep -q 'maxLength: 64' "$f" || { echo "crd-bound-quantities: no quantity pattern found in $f; has controller-gen changed?" >&2; exit 1; }
done
