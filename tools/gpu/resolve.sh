#!/usr/bin/env bash
# resolve.sh — ask this machine's loader where every packaged binary's libraries come from, and
# fail unless each is inside the package (PACKAGE_DIR/lib) or is one the GPU machine provides
# (tools/gpu/gpu_machine_libs.txt) and was found. The loader is run in trace mode
# (LD_TRACE_LOADED_OBJECTS, what ldd does): nothing is executed. Complements closure.sh (which
# reads headers only) with the real search order: RPATH, LD_LIBRARY_PATH, cache, system folders.
# Open MPI components are dlopen'ed at run time; the dry run exercises them (tools/gpu/dry_run.sh).
#
# usage: tools/gpu/resolve.sh PACKAGE_DIR [ALLOWLIST]
# Relies on: the system's dynamic loader. Tested by: tests/gpu/test_gpu_package.sh.
set -euo pipefail

pkg="$(cd "${1:?usage: resolve.sh PACKAGE_DIR [ALLOWLIST]}" && pwd)"
allowlist="${2:-$(dirname "${BASH_SOURCE[0]}")/gpu_machine_libs.txt}"
declare -A provided=()
while read -r name; do provided[$name]=1; done < <(grep -v '^#' "$allowlist" | grep .)

problems=0 checked=0
report() {  # the first 20 problems in full, then only counted
  problems=$((problems + 1))
  ((problems <= 20)) && echo "resolve: $*"
  return 0
}
for bin in "$pkg"/bin/*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  checked=$((checked + 1))
  # A library the loader finds but cannot load ("file too short", wrong class) ends the trace
  # with an error and no "=>" line for it: the exit status and the error text count too.
  status=0
  trace="$(LD_TRACE_LOADED_OBJECTS=1 "$bin" 2>&1)" || status=$?
  if ((status != 0)) || grep -qi "error while loading" <<<"$trace"; then
    report "$(basename "$bin"): the loader failed (exit $status): $(grep -m1 -i error <<<"$trace" || true)"
  fi
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    path="${path/\/bin\/..\/lib\///lib/}"  # the loader prints $ORIGIN/../lib unnormalised
    if [[ "$path" == "not" ]]; then
      report "$(basename "$bin") needs $name: not found"
    elif [[ "$path" != "$pkg/lib/"* && -z "${provided[$name]:-}" ]]; then
      report "$(basename "$bin") loads $name from $path, outside the package"
    fi
  done <<<"$trace"
done
((checked)) || { echo "resolve: no binaries in $pkg/bin" >&2; exit 2; }
if ((problems)); then
  echo "resolve: FAILED, $problems problem(s)$( ((problems > 20)) && echo " (the first 20 shown)")"
  exit 1
fi
echo "resolve: ok: $checked binaries; every library from $pkg/lib or the GPU machine's list, all found"
