#!/usr/bin/env bash
# petsc_pack.sh -- a uniprocessor PETSc + SLEPc (MPIUNI, no MPI, no Fortran, optimized, shared)
# for the SLEPc example (examples/slepc) on a machine that has neither them nor a package
# registry (the GPU machine).  Built once here from the PyPI source distributions, packed into
# the git-ignored folder .petsc/ of the repository (carry it with the device tool), unpacked
# there by bench/gpu_run.sh (step slepc):
#
#   bench/petsc_pack.sh build [WORK]   download (pip download --no-binary :all:) petsc and slepc
#                                      $SAP_PETSC_VERSION (default 3.26.1), configure, build and
#                                      install them into WORK/prefix (default WORK:
#                                      /tmp/sap-petsc-build; several tens of minutes on 2 cores),
#                                      then pack
#   bench/petsc_pack.sh pack PREFIX    .petsc/petsc.tar.xz: PREFIX's include/ and lib/lib{petsc,
#                                      slepc}.so* (stripped), and .petsc/fallback/: xz copies of
#                                      reference BLAS/LAPACK, libgfortran, libquadmath
#   bench/petsc_pack.sh unpack [DIR]   (there) DIR/prefix from DIR/petsc.tar.xz (DIR default: the
#                                      repository's .petsc), and DIR/prefix/lib/compat/: the
#                                      libraries PETSc needs that the machine lacks (libblas.so.3
#                                      and liblapack.so.3 as links to its OpenBLAS, else the
#                                      packed reference ones; libquadmath, libgfortran from the
#                                      pack).  Prints the prefix; configure with
#                                      -DSAP_PETSC_DIR=<prefix> and run with
#                                      LD_LIBRARY_PATH=<prefix>/lib:<prefix>/lib/compat.
#                                      SAP_PETSC_FORCE_COMPAT=1 takes every library from the pack
#                                      (to test that path where the system has them)
#
# BLAS/LAPACK: PETSc links -llapack -lblas (the unversioned reference symbols, as the Debian
# libraries of bench/anchors/pack.sh); its sparse LU (the anchor of the example) does not call
# BLAS, SLEPc calls LAPACK on its small projected problems only.  glibc here (Debian 12: 2.36)
# must be no newer than the target's: pack prints the newest GLIBC symbol version needed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=$ROOT/.petsc
VER=${SAP_PETSC_VERSION:-3.26.1}
ARCHDIR=/usr/lib/x86_64-linux-gnu
cmd=${1:-}

lib_path() { # soname -> a path on this machine, or nothing
  local p
  p=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk -v s="$1" '$1 == s && /x86-64/ && !f {print $NF; f = 1}')
  [ -n "$p" ] || p=$(ls $ARCHDIR/$1 /lib/x86_64-linux-gnu/$1 /usr/lib64/$1 /usr/local/lib/$1 2>/dev/null | head -1)
  echo "$p"
}

do_pack() {
  local P=$1
  for f in "$P/include/slepceps.h" "$P/include/petscconf.h" "$P/lib/libpetsc.so" "$P/lib/libslepc.so"; do
    [ -e "$f" ] || { echo "petsc_pack.sh: $f missing (not a PETSc + SLEPc prefix)" >&2; exit 1; }
  done
  grep -q "define PETSC_HAVE_MPIUNI 1" "$P/include/petscconf.h" ||
    echo "petsc_pack.sh: warning: $P is not an MPIUNI build (the target needs its MPI then)" >&2
  local T
  T=$(mktemp -d)
  mkdir -p "$T/prefix/lib"
  cp -a "$P/include" "$T/prefix/"
  cp -a "$P"/lib/libpetsc.so* "$P"/lib/libslepc.so* "$T/prefix/lib/"
  chmod -R u+w "$T/prefix"
  for f in "$T"/prefix/lib/*.so*; do [ -L "$f" ] || strip --strip-unneeded "$f"; done
  # the build's own files of no use to a consumer
  rm -rf "$T/prefix/include/petsc/finclude" "$T/prefix/include/slepc/finclude" "$T/prefix/include/petsc/mpiuni/mpif.h"
  rm -rf "$DEST"
  mkdir -p "$DEST/fallback"
  local EXCL
  EXCL=$(git -C "$ROOT" rev-parse --path-format=absolute --git-path info/exclude 2>/dev/null || echo "$ROOT/.git/info/exclude")
  grep -qx '/.petsc/' "$EXCL" 2>/dev/null || echo '/.petsc/' >> "$EXCL"
  tar -C "$T/prefix" -cJf "$DEST/petsc.tar.xz" .
  # fallbacks, used only where the target lacks them (reference BLAS/LAPACK, not OpenBLAS)
  local so path
  for so in libblas.so.3 liblapack.so.3 libgfortran.so.5 libquadmath.so.0; do
    case "$so" in
      libblas.so.3) path=$ARCHDIR/blas/libblas.so.3 ;;
      liblapack.so.3) path=$ARCHDIR/lapack/liblapack.so.3 ;;
      *) path=$(lib_path "$so") ;;
    esac
    if [ -e "$path" ]; then
      cp -L "$path" "$DEST/fallback/$so" && chmod u+w "$DEST/fallback/$so" &&
        strip --strip-unneeded "$DEST/fallback/$so" && xz -9 -f "$DEST/fallback/$so"
    else
      echo "petsc_pack.sh: warning: no $so here to pack as a fallback" >&2
    fi
  done
  local glibc
  glibc=$(objdump -T "$T"/prefix/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t. -k1,1 -k2,2n -k3,3n -u | tail -1)
  {
    echo "PETSc $(awk '/define PETSC_VERSION_(MAJOR|MINOR|SUBMINOR)/ {printf "%s%s", s, $3; s = "."}' "$P/include/petscversion.h")"
    echo "SLEPc $(awk '/define SLEPC_VERSION_(MAJOR|MINOR|SUBMINOR)/ {printf "%s%s", s, $3; s = "."}' "$P/include/slepcversion.h")"
    echo "packed $(date -u '+%Y-%m-%d %H:%M UTC') from $P by bench/petsc_pack.sh"
    echo "configure: $(grep -h '^CONFIGURE_OPTIONS' "$P/lib/petsc/conf/petscvariables" 2>/dev/null | cut -d= -f2-)"
    echo "newest glibc symbol version needed: $glibc (build host: $(ldd --version | head -1 | awk '{print $NF}'))"
  } > "$DEST/VERSION"
  rm -rf "$T"
  cat "$DEST/VERSION"
  echo "petsc_pack.sh: $DEST, $(du -sh "$DEST" | cut -f1)"
  ls -la "$DEST" "$DEST/fallback" | sed 's/^/  /'
}

case "$cmd" in
build)
  WORK=${2:-/tmp/sap-petsc-build}
  mkdir -p "$WORK"
  WORK=$(cd "$WORK" && pwd)
  P=$WORK/prefix
  cd "$WORK"
  if [ ! -d "petsc-$VER" ]; then
    [ -f "petsc-$VER.tar.gz" ] || pip download --no-deps --no-binary :all: "petsc==$VER" -d "$WORK"
    tar xzf "petsc-$VER.tar.gz"
  fi
  if [ ! -d "slepc-$VER" ]; then
    if [ ! -f "slepc-$VER.tar.gz" ]; then
      # slepc's metadata step needs setuptools + wheel and, isolated, builds PETSc as its build
      # requirement: download it without isolation from a throwaway virtual environment
      python3 -m venv "$WORK/venv" && "$WORK/venv/bin/pip" install -q setuptools wheel
      "$WORK/venv/bin/pip" download --no-deps --no-binary :all: --no-build-isolation "slepc==$VER" -d "$WORK"
    fi
    tar xzf "slepc-$VER.tar.gz"
  fi
  cd "$WORK/petsc-$VER"
  # no MPI (MPIUNI), no Fortran, no C++, no X, no GPU (sap is the GPU part); BLAS/LAPACK: -llapack -lblas
  nice -n 10 python3 ./configure --prefix="$P" --with-mpi=0 --with-fc=0 --with-cxx=0 --with-debugging=0 \
    --with-shared-libraries=1 COPTFLAGS=-O2 --with-x=0 --with-ssl=0 --with-cuda=0 --with-hip=0 --with-sycl=0 \
    --with-kokkos=0 --with-openmp=0 --with-hwloc=0 --with-zlib=0 \
    --with-blaslapack-lib="-L$ARCHDIR -llapack -lblas" --with-make-np="$(nproc)"
  nice -n 10 make PETSC_DIR="$PWD" PETSC_ARCH=arch-linux-c-opt all
  make PETSC_DIR="$PWD" PETSC_ARCH=arch-linux-c-opt install
  cd "$WORK/slepc-$VER"
  unset PETSC_ARCH
  export PETSC_DIR=$P SLEPC_DIR=$PWD
  nice -n 10 python3 ./configure --prefix="$P"
  nice -n 10 make
  make install
  do_pack "$P"
  ;;
pack)
  [ -n "${2:-}" ] || { echo "usage: bench/petsc_pack.sh pack PREFIX" >&2; exit 2; }
  do_pack "$(cd "$2" && pwd)"
  ;;
unpack)
  D=${2:-$DEST}
  D=$(cd "$D" && pwd)
  [ -f "$D/petsc.tar.xz" ] || { echo "petsc_pack.sh: $D/petsc.tar.xz missing (bench/petsc_pack.sh build, where PyPI is reachable)" >&2; exit 1; }
  P=$D/prefix
  if [ ! -e "$P/lib/libslepc.so" ]; then
    rm -rf "$P" && mkdir -p "$P" && tar -C "$P" -xJf "$D/petsc.tar.xz"
  fi
  C=$P/lib/compat
  rm -rf "$C" && mkdir -p "$C"
  force=${SAP_PETSC_FORCE_COMPAT:-0}
  ob=$(lib_path libopenblas.so.0)
  [ -n "$ob" ] || ob=$(ls /opt/OpenBLAS/lib/libopenblas.so.0 2>/dev/null | head -1)
  for so in libquadmath.so.0 libgfortran.so.5 libblas.so.3 liblapack.so.3; do
    if [ "$force" != 1 ] && [ -n "$(lib_path "$so")" ]; then continue; fi
    case "$so" in
      libblas.so.3|liblapack.so.3)
        if [ "$force" != 1 ] && [ -n "$ob" ]; then ln -sf "$ob" "$C/$so"; echo "petsc_pack.sh: $so -> $ob" >&2; continue; fi ;;
    esac
    if [ -f "$D/fallback/$so.xz" ]; then
      xz -dc "$D/fallback/$so.xz" > "$C/$so"; echo "petsc_pack.sh: packed $so" >&2
    else
      echo "petsc_pack.sh: warning: $so neither here nor packed" >&2
    fi
  done
  echo "$P"
  ;;
*)
  echo "usage: bench/petsc_pack.sh build [WORK] | pack PREFIX | unpack [DIR]" >&2
  exit 2
  ;;
esac
