#!/usr/bin/env bash
# A re-run leaves the tree clean (issue 54 §7): clone this repository's HEAD (committed work only) into a
# fresh folder, install it (`make env`, through the lock constraints.txt), run the README's reproduction
# `make reproduce SCALE=<scale>` and check that `git status --porcelain` is empty afterwards.
#
#   benchmarks/clean_rerun.sh [SCALE] [CLONE_DIR]      # SCALE: smoke (default) | cpu; CLONE_DIR: a new folder
#   benchmarks/clean_rerun.sh smoke /tmp/fresh -- test  # also time `make test` in the clone, after the reproduction
#
# Prints each step's wall time beside the 1-minute load average at its start and end (on shared cores
# the times grow with the load); the logs are written beside the clone (CLONE_DIR.logs/), never into it.
# Exit status 1, with the files listed, when the reproduction left the tree dirty.
set -euo pipefail
scale=${1:-smoke}
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
dir=${2:-$(mktemp -u /tmp/clean-rerun.XXXXXX)}
also_test=0
[ "${3:-}" = "--" ] && [ "${4:-}" = "test" ] && also_test=1
[ -e "$dir" ] && { echo "$dir exists: give a new folder" >&2; exit 2; }
logs="$dir.logs"
mkdir -p "$logs"
export MPLBACKEND=Agg HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
step() {  # step NAME COMMAND...: run it in the clone, log it, print its time and the load before/after
  local name=$1; shift
  local l0 t0 rc=0
  l0=$(load); t0=$(date +%s)
  (cd "$dir" && "$@") >"$logs/$name.log" 2>&1 || rc=$?
  printf '%-28s %5d s   load %s -> %s   rc %d   (%s)\n' "$name" $(( $(date +%s) - t0 )) "$l0" "$(load)" "$rc" "$logs/$name.log"
  return $rc
}

git clone -q "$src" "$dir"
echo "clone of $(git -C "$dir" rev-parse --short HEAD) in $dir ($(nproc) cores)"
step "make env" make env
rc=0
step "make reproduce SCALE=$scale" make reproduce SCALE="$scale" || rc=$?
[ $rc -ne 0 ] && echo "the reproduction failed (its log names the notebook and cell); the tree is checked all the same"
dirty=$(git -C "$dir" status --porcelain)
if [ -n "$dirty" ]; then
  echo "NOT CLEAN: make reproduce SCALE=$scale changed $(echo "$dirty" | wc -l) path(s):"
  echo "$dirty" | head -50
  clean=1
else
  echo "clean: git status --porcelain is empty after make reproduce SCALE=$scale"
  clean=0
fi
if [ $also_test -eq 1 ]; then
  step "make test-unit" make test-unit || true
  step "make test-notebooks" make test-notebooks || true
  tail -n 3 "$logs/make test-unit.log" "$logs/make test-notebooks.log"
fi
exit $(( clean || rc ))
