#!/usr/bin/env bash
# Builds and installs the Python package sap (python/, scikit-build-core) into a virtual
# environment under the build folder: ${SAP_BUILD_DIR:-build}/venv (no system-wide pip
# install, so no --break-system-packages on Debian 12).  Activate it with
#   . build/venv/bin/activate
# Where numpy, scipy, pytest and scikit-build-core are already importable by the
# interpreter (a machine without a registry, e.g. the GPU machine), the venv sees them
# through --system-site-packages and pip downloads nothing; else pip fetches them.
# usage: scripts/python.sh [--test [pytest args]]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SAP_BUILD_DIR:-build}
PYTHON=${SAP_PYTHON:-python3}
VENV=$BUILD/venv
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv --system-site-packages "$VENV"
fi
need=""
for mod in numpy scipy pytest scikit_build_core; do
    "$VENV/bin/python" -c "import $mod" 2>/dev/null || need="$need ${mod//_/-}"
done
if [ -n "$need" ]; then
    echo "scripts/python.sh: pip install$need"
    "$VENV/bin/pip" install -q --disable-pip-version-check $need
fi
# --no-build-isolation: build with the venv's scikit-build-core (no download at build time);
# build-dir: incremental rebuilds of the extension and the C library under it
"$VENV/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps \
    -C build-dir="$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)/python" ./python
"$VENV/bin/python" -c "import sap; print('scripts/python.sh: sap', sap.__version__, 'installed in $VENV')"
if [ "${1:-}" = "--test" ]; then
    shift
    export SAP_MATRIX_DIR=${SAP_MATRIX_DIR:-$(cd .. && pwd)/shared/matrices}
    export SAP_BUILD_DIR=$BUILD # the README test runs its sh blocks against this build
    # run from the tests folder so that the installed package, not python/src, is imported
    py=$(cd "$VENV/bin" && pwd)/python
    (cd python/tests && "$py" -m pytest -q -p no:cacheprovider "$@" .)
fi
