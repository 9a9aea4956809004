#!/usr/bin/env bash
# A re-run leaves the tree clean (issue 54 §7), and what the README's commands cost on a fresh clone.
#
#   benchmarks/clean_rerun.sh [--test] [--dir CLONE_DIR] [SCALE ...]
#
# Clones this repository's HEAD (committed work only) into a new folder (default: a fresh one under /tmp),
# installs it (`make env`, through the lock constraints.txt), with --test runs `make test` (its two halves,
# test-unit and test-notebooks, timed apart), then `make reproduce SCALE=<scale>` for each SCALE (default:
# smoke), and after every step checks that `git status --porcelain` is empty: a step that rewrites a
# committed file (a figure, a page, an index) is named with the paths it changed.
#
# Each step prints its wall time, the CPU time it used (user + sys, its child processes included) and the
# 1-minute load average at its start and end: on shared cores the wall time grows with the load, the CPU
# time much less. The logs are written beside the clone (CLONE_DIR.logs/), never into it.
# Exit status 0 when every step passed and left the tree clean, else 1.
set -uo pipefail
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
dir="" test=0 scales=()
while [ $# -gt 0 ]; do
  case $1 in
    --test) test=1 ;;
    --dir) dir=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) scales+=("$1") ;;
  esac
  shift
done
[ ${#scales[@]} -eq 0 ] && scales=(smoke)
dir=${dir:-$(mktemp -u /tmp/clean-rerun.XXXXXX)}
[ -e "$dir" ] && { echo "$dir exists: give a new folder" >&2; exit 2; }
logs="$dir.logs"
mkdir -p "$logs"
export MPLBACKEND=Agg HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
failed=0
step() {  # step NAME COMMAND...: run it in the clone, log it, print wall and CPU time, the load, the tree's state
  local name=$1; shift
  local l0 t0 rc=0 cpu dirty
  l0=$(load); t0=$(date +%s)
  (cd "$dir" && /usr/bin/time -f "%U %S" -o "$logs/$name.cpu" "$@") >"$logs/$name.log" 2>&1 || rc=$?
  cpu=$(awk '{printf "%d", $1 + $2}' "$logs/$name.cpu" 2>/dev/null)
  dirty=$(git -C "$dir" status --porcelain)
  printf '%-28s wall %5d s  cpu %5s s  load %5s -> %-5s  rc %d  %s\n' "$name" $(( $(date +%s) - t0 )) "${cpu:-?}" \
    "$l0" "$(load)" "$rc" "$([ -z "$dirty" ] && echo "tree clean" || echo "TREE CHANGED: $(echo "$dirty" | wc -l) path(s)")"
  if [ -n "$dirty" ]; then
    echo "$dirty" | head -50 | sed 's/^/    /'
    git -C "$dir" checkout -q -- . && git -C "$dir" clean -qfd  # the next step starts from the committed tree
  fi
  [ $rc -ne 0 ] && echo "    failed: see $logs/$name.log"
  [ $rc -ne 0 ] || [ -n "$dirty" ] && failed=1
  return 0
}

git clone -q "$src" "$dir"
echo "clone of $(git -C "$dir" rev-parse --short HEAD) in $dir; $(nproc) cores; logs in $logs/"
step "make env" make env
if [ $test -eq 1 ]; then
  step "make test-unit" make test-unit
  step "make test-notebooks" make test-notebooks
fi
for s in "${scales[@]}"; do
  step "make reproduce SCALE=$s" make reproduce SCALE="$s"
done
exit $failed
