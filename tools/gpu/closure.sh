#!/usr/bin/env bash
# closure.sh — prove an unpacked GPU package (tools/gpu/package.sh) is self-contained, from
# its ELF headers alone (nothing is run, so it means the same on any machine):
#   - every library that any binary, carried library or Open MPI or PMIx component needs (NEEDED) is
#     in the package's lib/ or named in tools/gpu/gpu_machine_libs.txt;
#   - every binary has DT_RPATH $ORIGIN/../lib, and no carried object has a DT_RUNPATH (which
#     would hide the binaries' RPATH from its own dependencies);
#   - the newest GLIBC symbol version anything needs, and GLIBCXX versions against the carried
#     libstdc++, are printed (the GPU machine's glibc must be at least that new).
# Prints one line per problem and exits 1 if there is any; 0 with a summary otherwise.
#
# usage: tools/gpu/closure.sh PACKAGE_DIR [ALLOWLIST]
# Relies on: readelf (binutils). Tested by: tests/gpu/test_gpu_package.sh (on a good package,
# and on copies broken on purpose: a library removed, a RUNPATH put back, the RPATH missing).
set -euo pipefail

pkg="${1:?usage: closure.sh PACKAGE_DIR [ALLOWLIST]}"
allowlist="${2:-$(dirname "${BASH_SOURCE[0]}")/gpu_machine_libs.txt}"
[[ -d "$pkg/bin" && -d "$pkg/lib" ]] || { echo "closure.sh: $pkg has no bin/ and lib/: not a package" >&2; exit 2; }
[[ -f "$allowlist" ]] || { echo "closure.sh: allowlist $allowlist not found" >&2; exit 2; }
command -v readelf >/dev/null || { echo "closure.sh: readelf not found (binutils)" >&2; exit 2; }

declare -A provided=()
while read -r name; do provided[$name]=1; done < <(grep -v '^#' "$allowlist" | grep .)

problems=0
problem() { echo "closure: $*"; problems=$((problems + 1)); }

objects=()
for f in "$pkg"/bin/* "$pkg"/lib/*.so* "$pkg"/lib/openmpi/*.so "$pkg"/lib/pmix/*.so; do
  [[ -f "$f" ]] && objects+=("$f")
done
((${#objects[@]})) || { echo "closure.sh: no binaries or libraries under $pkg" >&2; exit 2; }

binaries=0 needed_total=0 glibc_max="2.0" glibcxx_want=()
for f in "${objects[@]}"; do
  rel="${f#"$pkg"/}"
  dyn="$(readelf -d "$f" 2>/dev/null)" || { problem "$rel: not an ELF file"; continue; }
  while read -r name; do
    needed_total=$((needed_total + 1))
    if [[ -z "${provided[$name]:-}" && ! -e "$pkg/lib/$name" ]]; then
      problem "$rel needs $name: not in the package, not on the GPU machine's list"
    fi
  done < <(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dyn")
  runpath="$(sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p' <<<"$dyn")"
  if [[ -n "$runpath" ]]; then
    problem "$rel has DT_RUNPATH [$runpath]: its dependencies would not see the package (run runpath_to_rpath.py)"
  fi
  if [[ $rel == bin/* ]]; then
    binaries=$((binaries + 1))
    rpath="$(sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p' <<<"$dyn")"
    if [[ "$rpath" != '$ORIGIN/../lib' ]]; then problem "$rel has RPATH [$rpath], not [\$ORIGIN/../lib]"; fi
  fi
  versions="$(readelf -V "$f" 2>/dev/null | grep -o 'GLIBC\(XX\)\?_[0-9][0-9.]*' | sort -Vu || true)"
  v="$(grep '^GLIBC_' <<<"$versions" | sed 's/GLIBC_//' | tail -n1 || true)"
  if [[ -n "$v" ]]; then glibc_max="$(printf '%s\n%s\n' "$glibc_max" "$v" | sort -V | tail -n1)"; fi
  v="$(grep '^GLIBCXX_' <<<"$versions" | tail -n1 || true)"
  if [[ -n "$v" ]]; then glibcxx_want+=("$rel $v"); fi
done

# Every GLIBCXX version asked for must be one the carried libstdc++ defines.
if [[ -e "$pkg/lib/libstdc++.so.6" ]]; then
  have="$(readelf -V "$pkg/lib/libstdc++.so.6" | grep -o 'GLIBCXX_[0-9][0-9.]*' | sort -Vu | tail -n1 || true)"
  for entry in "${glibcxx_want[@]}"; do
    want="${entry##* }"
    if [[ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | tail -n1)" != "$have" ]]; then
      problem "${entry% *} needs $want but the carried libstdc++ has only up to $have"
    fi
  done
fi

if ((problems)); then
  echo "closure: FAILED, $problems problem(s) in $pkg"
  exit 1
fi
echo "closure: ok: ${#objects[@]} objects ($binaries binaries), $needed_total NEEDED entries, all in the package" \
  "or on $(basename "$allowlist"); no DT_RUNPATH; needs glibc >= $glibc_max"
