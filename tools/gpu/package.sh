#!/usr/bin/env bash
# package.sh — build farthing here for a bare GPU machine and pack what it lacks into one
# compressed file: .gpu/farthing-gpu.tar.xz (at most 48 MiB; it fails above that).
#
# Why build here (and not carry Debian packages and build there): the GPU machine's time is
# short and counted; the whole build takes minutes of it, while unpacking takes seconds, and
# binaries built here do not depend on Open MPI's or HDF5's build tooling finding /usr paths.
#
# What the package holds (farthing-gpu/ inside the archive):
#   bin/          farthing and the binaries of the tests a GPU visit runs (ctest_manifest.py says
#                 which: not the CPU suite, which runs in CI), stripped, each with
#                 DT_RPATH $ORIGIN/../lib (RPATH, not RUNPATH: it also covers the libraries
#                 those libraries load, and the Open MPI components dlopen'ed later); and
#                 mpirun, Open MPI's launcher (orterun) with its RUNPATH rewritten to the same,
#                 for the check's two-rank runs on one node (no orted: nothing starts elsewhere)
#   lib/          every shared library they need that tools/gpu/gpu_machine_libs.txt does not
#                 list (the machine's glibc, driver, CUDA runtime, cuBLAS(Lt) and NCCL), stripped,
#                 DT_RUNPATH turned into DT_RPATH (runpath_to_rpath.py says why)
#   lib/openmpi/  Open MPI's components (mca_*.so) whose own needs are met by the package: an
#                 MPI_Init with no launcher is an "isolated" singleton (mpi_communicator.cpp);
#                 under mpirun the ranks reach the launcher through PMIx (mca_pmix_ext3x, which
#                 brings libpmix)
#   lib/pmix/     PMIx's own plugins
#   share/openmpi/, share/pmix/  Open MPI's and PMIx's help texts (their error messages)
#   ctest/CTestTestfile.cmake.in  those tests with @PKG@/@SRC@ for the paths (check.sh)
#   env.sh        the environment the binaries run with (sourced by check.sh)
#   MANIFEST      each carried file and where it came from; components left out and why
#   GLIBC_MIN     the oldest glibc the package runs on (Debian 12's libraries need 2.36)
#   BUILT_FROM    the commit the binaries were built from, and whether the tree was clean
# tools/gpu/closure.sh checks the package's library closure before it is compressed.
#
# usage: tools/gpu/package.sh        (JOBS=N build parallelism, default nproc; BUILD=build-gpu)
# Relies on: cmake, the CUDA toolkit, binutils (readelf, strip), python3, xz, and the
# packages tools/setup.sh installs. Tested by: tests/gpu (size and closure of the package),
# tools/gpu/dry_run.sh (unpack and run check.sh here with the system's copies hidden).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="${BUILD:-build-gpu}"
jobs="${JOBS:-$(nproc)}"
limit_mib=48
out_dir=".gpu"
archive="$out_dir/farthing-gpu.tar.xz"
stage="$build/package"
pkg="$stage/farthing-gpu"
allowlist="tools/gpu/gpu_machine_libs.txt"
ompi_components=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
ompi_help=/usr/share/openmpi
pmix_prefix=/usr/lib/x86_64-linux-gnu/pmix2

die() { echo "package.sh: $*" >&2; exit 1; }
command -v xz >/dev/null || die "xz not found (apt-get install xz-utils)"
# Ninja when the machine has it, else make (build-essential); an existing build folder keeps
# the generator it was configured with.
generator=()
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  if command -v ninja >/dev/null; then generator=(-G Ninja); else generator=(-G "Unix Makefiles"); fi
fi

# Portable CPU code (x86-64-v3: AVX2 and FMA, which every H100/H200 host has) instead of
# -march=native; CUDA for sm_90 (the default in cmake/FarthingDependencies.cmake).
# cuDNN attention (kernels/cuda/attention_cudnn.h) needs only headers here: the cudnn-frontend's
# and cuDNN's, from their PyPI wheels (installed now when missing: the cuDNN wheel is large, so
# only this step fetches it, not tools/test.sh). The package carries no libcudnn: the GPU
# machine's own (its PyTorch's nvidia-cudnn-cu13) is loaded at run time.
cudnn_wheels=(nvidia-cudnn-frontend==1.32.0 nvidia-cudnn-cu13==9.26.0.51)
if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('nvidia.cudnn') is None or u.find_spec('cudnn') is None)" 2>/dev/null; then
  echo "== pip install --no-deps ${cudnn_wheels[*]} (cuDNN's headers)"
  python3 -m pip install -q --no-deps "${cudnn_wheels[@]}" >/dev/null 2>&1 ||
    python3 -m pip install -q --no-deps --break-system-packages "${cudnn_wheels[@]}" >/dev/null ||
    die "could not install ${cudnn_wheels[*]} (cuDNN's headers)"
fi
echo "== configure $build"
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFARTHING_CUDA=ON -DFARTHING_CUDNN=ON -DFARTHING_NATIVE=OFF \
  -DCMAKE_CXX_FLAGS=-march=x86-64-v3 -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
echo "== build ($jobs jobs)"
cmake --build "$build" -j "$jobs"

rm -rf "$stage"
mkdir -p "$pkg/bin" "$pkg/lib/openmpi" "$pkg/lib/hwloc" "$pkg/share" "$pkg/ctest" "$out_dir"
manifest="$pkg/MANIFEST"
: >"$manifest"

echo "== tests and binaries"
(cd "$build" && ctest --show-only=json-v1) |
  python3 tools/gpu/ctest_manifest.py "$build" . "$pkg/ctest/CTestTestfile.cmake.in" >"$stage/binaries.txt"
echo "$root/$build/bin/farthing" >>"$stage/binaries.txt"
sort -u "$stage/binaries.txt" | while read -r bin; do
  [[ -x "$bin" ]] || die "a test runs $bin, which the build did not produce"
  strip --strip-unneeded -o "$pkg/bin/$(basename "$bin")" "$bin"
  echo "bin/$(basename "$bin") <- ${bin#"$root/"}" >>"$manifest"
done

# Libraries: walk NEEDED entries breadth-first from the binaries; each soname not on the
# GPU machine's list is copied (dereferenced, under its soname) from where this machine's
# loader finds it, and its own NEEDED entries join the walk.
declare -A provided=() carried=()
while read -r name; do provided[$name]=1; done < <(grep -v '^#' "$allowlist" | grep .)
needed_of() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
loader_cache="$(ldconfig -p)"
system_path_of() {  # the path this machine's loader resolves a soname to (first match)
  awk -v n="$1" '$1 == n && /x86-64/ && !found { print $NF; found = 1 }' <<<"$loader_cache"
}
carry_closure_of() {
  local queue=("$@") obj name path
  while ((${#queue[@]})); do
    obj="${queue[0]}"; queue=("${queue[@]:1}")
    while read -r name; do
      [[ -n "${provided[$name]:-}" || -n "${carried[$name]:-}" ]] && continue
      path="$(system_path_of "$name")"
      if [[ -z "$path" && -e "/usr/lib/x86_64-linux-gnu/openmpi/lib/$name" ]]; then
        path="/usr/lib/x86_64-linux-gnu/openmpi/lib/$name"
      fi
      [[ -n "$path" ]] || die "$(basename "$obj") needs $name, which this machine's loader cannot find"
      strip --strip-unneeded -o "$pkg/lib/$name" "$(readlink -f "$path")"
      python3 tools/gpu/runpath_to_rpath.py "$pkg/lib/$name" >/dev/null
      carried[$name]="$path"
      echo "lib/$name <- $path" >>"$manifest"
      queue+=("$pkg/lib/$name")
    done < <(needed_of "$obj")
  done
}
echo "== libraries"
carry_closure_of "$pkg"/bin/*
# carry_plugin FILE FOLDER: a dlopen'ed plugin into the package's FOLDER, with its libraries.
carry_plugin() {
  local to="$pkg/$2/$(basename "$1")"
  strip --strip-unneeded -o "$to" "$1"
  python3 tools/gpu/runpath_to_rpath.py "$to" >/dev/null
  echo "$2/$(basename "$1") <- $1" >>"$manifest"
  carry_closure_of "$to"
}

# Open MPI's launcher, for the GPU check's two-rank runs on its one GPU (ZeRO-3 through the
# host-staged communicator: tools/gpu/zero_staged_check.sh). Pointed at the package's lib/ like
# the binaries above.
launcher="$(readlink -f "$(command -v orterun || command -v mpirun)")"
strip --strip-unneeded -o "$pkg/bin/mpirun" "$launcher"
python3 tools/gpu/runpath_to_rpath.py --origin-lib "$pkg/bin/mpirun" >/dev/null
echo "bin/mpirun <- $launcher" >>"$manifest"
carry_closure_of "$pkg/bin/mpirun"

# Open MPI components: only those whose needs the package already meets or that need only
# Open MPI's own helper libraries (libmca_common_*: shared memory, MPI-IO, monitoring) or PMIx
# (how ranks started by mpirun reach it); those wanting network stacks (UCX, libfabric, PSM,
# verbs), netlink or OpenSHMEM are left out: one node's ranks never select them.
echo "== Open MPI components"
ompi_own_lib() {
  case "$1" in
    libmca_common_ucx*|libmca_common_ofi*|libmca_common_verbs*|libmca_common_cuda*) return 1 ;;
    libmca_common_*|libpmix.so.*) return 0 ;;
    *) return 1 ;;
  esac
}
for comp in "$ompi_components"/mca_*.so; do
  missing=""
  while read -r name; do
    [[ -n "${provided[$name]:-}" || -n "${carried[$name]:-}" ]] && continue
    ompi_own_lib "$name" || missing+=" $name"
  done < <(needed_of "$comp")
  if [[ -n "$missing" ]]; then
    echo "left out: lib/openmpi/$(basename "$comp") (needs$missing)" >>"$manifest"
    continue
  fi
  carry_plugin "$comp" lib/openmpi
done
cp -r "$ompi_help" "$pkg/share/openmpi"
echo "share/openmpi/ <- $ompi_help" >>"$manifest"
# PMIx's plugins and help texts, from the prefix the carried libpmix was built for.
[[ -n "${carried[libpmix.so.2]:-}" ]] || die "no Open MPI component brought libpmix.so.2: mpirun's ranks could not reach it"
mkdir -p "$pkg/lib/pmix"
for plugin in "$pmix_prefix"/lib/pmix/*.so; do
  carry_plugin "$plugin" lib/pmix
done
cp -r "$pmix_prefix/share/pmix" "$pkg/share/pmix"
echo "share/pmix/ <- $pmix_prefix/share/pmix" >>"$manifest"

# What the binaries were built from (the working tree may hold uncommitted changes).
{ git log -1 --format='%h %s' 2>/dev/null || echo "no git history"
  echo "uncommitted changes in $(git status --porcelain --untracked-files=no 2>/dev/null | wc -l) tracked files"
  date -u +"built %Y-%m-%dT%H:%M:%SZ on $(hostname)"; } >"$pkg/BUILT_FROM"

cat >"$pkg/env.sh" <<'ENV'
# env.sh — the environment for the package's binaries; source it with PKG set to this folder.
# Libraries come from the binaries' RPATH ($ORIGIN/../lib), not from LD_LIBRARY_PATH, so the
# machine's own tools (ctest, python) keep their own libraries. Open MPI looks for its
# components, help texts and settings in the package only; hwloc loads no plugins (the GPU
# machine has none, and this keeps a run here identical). PMIx (mpirun's ranks) likewise: its
# plugins and help texts from the package (PMIX_PREFIX relocates it).
export OMPI_MCA_mca_base_component_path="$PKG/lib/openmpi"
export OPAL_PKGLIBDIR="$PKG/lib/openmpi"
export OPAL_PKGDATADIR="$PKG/share/openmpi"
export OPAL_SYSCONFDIR="$PKG/etc"
export OMPI_MCA_mca_base_param_files="$PKG/etc/openmpi-mca-params.conf"
export HWLOC_PLUGINS_PATH="$PKG/lib/hwloc"
export PMIX_PREFIX="$PKG"
export PMIX_MCA_mca_base_component_path="$PKG/lib/pmix"
ENV
mkdir -p "$pkg/etc"
printf '# Open MPI settings for the package (none needed for an isolated singleton or one node).\n' \
  >"$pkg/etc/openmpi-mca-params.conf"

echo "== closure"
tools/gpu/closure.sh "$pkg" | tee "$stage/closure.txt"
# The oldest glibc the package can run on, for check.sh to compare with the machine's.
sed -n 's/.*needs glibc >= \([0-9.]*\).*/\1/p' "$stage/closure.txt" >"$pkg/GLIBC_MIN"
[[ -s "$pkg/GLIBC_MIN" ]] || die "closure.sh did not report the glibc the package needs"

echo "== compress"
tar -C "$stage" --owner=0 --group=0 --sort=name -cf - farthing-gpu | xz -9e -T"$jobs" >"$archive.tmp"
mv "$archive.tmp" "$archive"
raw_kib=$(du -sk "$pkg" | awk '{print $1}')
size_bytes=$(stat -c %s "$archive")
echo "package: $archive $((size_bytes / 1024)) KiB compressed ($((raw_kib / 1024)) MiB unpacked):" \
  "$(ls "$pkg/bin" | wc -l) binaries, $(ls "$pkg/lib" | grep -c '\.so') libraries," \
  "$(ls "$pkg/lib/openmpi" | wc -l) Open MPI components"
((size_bytes <= limit_mib * 1024 * 1024)) || die "$archive is over $limit_mib MiB"
