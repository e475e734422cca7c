#!/usr/bin/env bash
# pack.sh -- gathers the CPU anchors of bench/suite (SuperLU, UMFPACK, MUMPS sequential,
# from Debian's libsuperlu-dev, libsuitesparse-dev, libmumps-seq-dev; CHOLMOD and UMFPACK
# also serve the library's direct-host method, which the top-level CMake finds there too
# with -DSAP_SUITE_ANCHOR_PREFIX) into the git-ignored
# folder .anchors/ of the repository, so that a machine without those packages (the GPU
# machine: no package registry) can build and run them:
#     cmake -DSAP_SUITE_ANCHOR_PREFIX=$PWD/.anchors ...      (bench/run_suite.sh does it)
#
#   .anchors/include/         the headers the suite includes (and what they include)
#   .anchors/lib.tar.xz       -> lib/: the solver libraries and their non-system dependencies
#                             (amd, camd, colamd, ccolamd, cholmod, suitesparseconfig,
#                             metis, scotch, scotcherr, esmumps, mumps_common, mpiseq,
#                             pord), stripped, with the unversioned .so links for linking;
#                             bench/suite gets lib/ as its RPATH.  CMake unpacks the archive
#                             (SAP_SUITE_ANCHOR_PREFIX set and lib/ without the libraries)
#   .anchors/lib/fallback/    libgfortran/libquadmath and reference BLAS/LAPACK, .xz: used only
#                             when the target has none (run_suite.sh adds them to
#                             LD_LIBRARY_PATH then; the target's own, newer ones win
#                             otherwise -- the Debian libraries need only the unversioned
#                             BLAS/LAPACK symbols and GFORTRAN_8/10, which newer ones have)
# glibc here (Debian 12: 2.36) must be no newer than the target's; the script prints the
# newest GLIBC symbol version the packed libraries need.
#
# usage: bench/anchors/pack.sh [--install]   (--install: apt-get install the packages first)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=$ROOT/.anchors
PKGS="libsuperlu-dev libsuitesparse-dev libmumps-seq-dev"
ARCHDIR=/usr/lib/x86_64-linux-gnu

if [ "${1:-}" = "--install" ]; then
  missing=""
  for p in $PKGS; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
  fi
fi
for f in /usr/include/superlu/slu_ddefs.h /usr/include/suitesparse/umfpack.h /usr/include/dmumps_c.h \
         $ARCHDIR/libsuperlu.so $ARCHDIR/libumfpack.so $ARCHDIR/libdmumps_seq.so; do
  [ -e "$f" ] || { echo "pack.sh: $f missing; install $PKGS (or run with --install)" >&2; exit 1; }
done

rm -rf "$DEST"
mkdir -p "$DEST/include" "$DEST/lib/fallback"
# (a worktree's .git is a file: ask git where info/exclude is)
EXCL=$(git -C "$ROOT" rev-parse --path-format=absolute --git-path info/exclude 2>/dev/null || echo "$ROOT/.git/info/exclude")
grep -qx '/.anchors/' "$EXCL" 2>/dev/null || echo '/.anchors/' >> "$EXCL"

# ---- headers: exactly what the suite's includes pull in -------------------------------
tmpc=$(mktemp --suffix=.c)
printf '#include <slu_ddefs.h>\n#include <umfpack.h>\n#include <cholmod.h>\n#include <dmumps_c.h>\n' > "$tmpc"
deps=$(gcc -M -I/usr/include/superlu -I/usr/include/suitesparse "$tmpc" | tr ' \\' '\n\n' | grep -E '^/usr/include/(superlu|suitesparse)/|^/usr/include/[a-z_]*mumps[a-z_]*\.h$|^/usr/include/mumps_' || true)
rm -f "$tmpc"
for h in $deps; do
  rel=${h#/usr/include/}
  mkdir -p "$DEST/include/$(dirname "$rel")"
  cp -L "$h" "$DEST/include/$rel"
done

# ---- libraries: the closure of NEEDED over the non-system libraries -------------------
# system (present on any glibc target with gcc, and provided there in newer versions):
is_system() {
  case "$1" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*|libgomp.so*) return 0 ;;
    libz.so*|libbz2.so*|liblzma.so*) return 0 ;;
  esac
  return 1
}
is_fallback() {
  case "$1" in libgfortran.so*|libquadmath.so*|libblas.so*|liblapack.so*) return 0 ;; esac
  return 1
}
resolve() { # soname -> path here
  ldconfig -p | awk -v s="$1" '$1 == s && $0 ~ /x86-64/ && !f {print $NF; f = 1}'
}
queue="libsuperlu.so.5 libumfpack.so.5 libdmumps_seq-5.5.so libmumps_common_seq-5.5.so libmpiseq_seq-5.5.so libpord_seq-5.5.so"
done_list=" "
while [ -n "$queue" ]; do
  set -- $queue; so=$1; shift; queue="$*"
  case "$done_list" in *" $so "*) continue ;; esac
  done_list="$done_list$so "
  is_system "$so" && continue
  path=$(resolve "$so"); [ -n "$path" ] || path=$ARCHDIR/$so
  [ -e "$path" ] || { echo "pack.sh: cannot find $so" >&2; exit 1; }
  if is_fallback "$so"; then
    case "$so" in
      libblas.so.3) path=$ARCHDIR/blas/libblas.so.3 ;;       # reference BLAS, not the OpenBLAS alternative
      liblapack.so.3) path=$ARCHDIR/lapack/liblapack.so.3 ;;
    esac
    cp -L "$path" "$DEST/lib/fallback/$so"
  else
    cp -L "$path" "$DEST/lib/$so"
  fi
  for n in $(readelf -d "$path" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}'); do queue="$queue $n"; done
done
chmod u+w "$DEST"/lib/*.so* "$DEST"/lib/fallback/*.so*
strip --strip-unneeded "$DEST"/lib/*.so* "$DEST"/lib/fallback/*.so*
# the fallbacks are a last resort (the target's own libgfortran and OpenBLAS are
# preferred): kept xz-compressed, run_suite.sh unpacks one only when the target lacks it
glibc=$(objdump -T "$DEST"/lib/*.so* "$DEST"/lib/fallback/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t. -k1,1 -k2,2n -k3,3n -u | tail -1)
for f in "$DEST"/lib/fallback/*.so*; do xz -9 -f "$f"; done

# link-time names (find_library looks for lib<name>.so)
cd "$DEST/lib"
ln -sf libsuperlu.so.5 libsuperlu.so
ln -sf libumfpack.so.5 libumfpack.so
# CHOLMOD and SuiteSparse_config: the top-level CMake's direct-host method (SAP_HAVE_SUITESPARSE)
# finds them only under these names; without them the suite's sap_direct_host is NOT_COMPILED
ln -sf libcholmod.so.3 libcholmod.so
ln -sf libsuitesparseconfig.so.5 libsuitesparseconfig.so
ln -sf libdmumps_seq-5.5.so libdmumps_seq.so
ln -sf libmumps_common_seq-5.5.so libmumps_common_seq.so
ln -sf libmpiseq_seq-5.5.so libmpiseq_seq.so
ln -sf libpord_seq-5.5.so libpord_seq.so

echo "pack.sh: $DEST"
ls -la "$DEST/lib" "$DEST/lib/fallback" | sed 's/^/  /'
# to travel small, the libraries go into lib.tar.xz (unpacked again by CMake at configure
# time when SAP_SUITE_ANCHOR_PREFIX points here and lib/ lacks them)
tar -C "$DEST/lib" --exclude=./fallback -cJf "$DEST/lib.tar.xz" .
find "$DEST/lib" -maxdepth 1 \( -type f -o -type l \) -delete
echo "  headers: $(find "$DEST/include" -type f | wc -l) files"
echo "  newest glibc symbol version needed: $glibc (build host: $(ldd --version | head -1 | awk '{print $NF}'))"
echo "  size: $(du -sh "$DEST" | cut -f1)"
