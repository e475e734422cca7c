"""sap: the SaP sparse/banded linear solvers (CUDA GPUs and multicore CPUs) for SciPy.

    >>> import sap, scipy.sparse as sp, numpy as np
    >>> A = sp.random(1000, 1000, density=0.01, random_state=0) + 20 * sp.eye(1000)
    >>> x = sap.solve(A, np.ones(1000))

Options take the names of the command line's ``--opt`` and of ``sap_solver_options_set``
(``method``, ``precision``, ``tol``, ``maxit``, ``partitions``, ``drop``, ``db``, ...), plus
``backend`` ("auto", "cpu", "cuda") and ``threads``.  Library errors raise a subclass of
:class:`sap.Error` carrying ``status`` (the code), ``name`` (e.g. ``"SAP_ERR_INVALID"``)
and ``message``; library warnings (not converged, boosted pivots) are issued as
:class:`sap.SapWarning`.
"""
from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any, Dict, Optional, Tuple

import numpy as np
import scipy.sparse as _sp
from scipy.sparse.linalg import LinearOperator

from . import _sap

__all__ = ["solve", "Solver", "info", "reorder", "gen", "read_mm", "build_info", "options_help",
           "Error", "InvalidError", "OutOfMemoryError", "DeviceError", "FileFormatError",
           "SingularError", "SapWarning", "__version__"]

__version__: str = _sap.build_info()["version"]


# ---- errors ---------------------------------------------------------------------------------

class Error(Exception):
    """A sap library error: ``status`` (int code), ``name`` (``SAP_ERR_...``), ``message``."""

    def __init__(self, status: int, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.status = status
        self.name = name
        self.message = message


class InvalidError(Error, ValueError):
    """Bad input: invalid argument or option, index out of range, NaN/Inf, not square."""


class OutOfMemoryError(Error, MemoryError):
    """Out of memory, or a problem too large for this machine."""


class DeviceError(Error, RuntimeError):
    """No GPU, a GPU error, or a feature not compiled into this build."""


class FileFormatError(Error, OSError):
    """A Matrix Market file that cannot be read (I/O, parse, banner, counts, truncation)."""


class SingularError(Error, ArithmeticError):
    """A structurally or numerically singular matrix, or a breakdown with non-finite values."""


class SapWarning(UserWarning):
    """A library warning (not converged, stagnated, boosted pivots, ...)."""


_ERROR_CLASSES = {
    "SAP_ERR_INVALID": InvalidError, "SAP_ERR_INDEX": InvalidError, "SAP_ERR_NONFINITE": InvalidError,
    "SAP_ERR_NOT_SQUARE": InvalidError, "SAP_ERR_UNSUPPORTED": InvalidError,
    "SAP_ERR_OUT_OF_MEMORY": OutOfMemoryError, "SAP_ERR_TOO_LARGE": OutOfMemoryError,
    "SAP_ERR_NO_DEVICE": DeviceError, "SAP_ERR_DEVICE": DeviceError, "SAP_ERR_NOT_COMPILED": DeviceError,
    "SAP_ERR_IO": FileFormatError, "SAP_ERR_PARSE": FileFormatError, "SAP_ERR_BANNER": FileFormatError,
    "SAP_ERR_SIZE_LINE": FileFormatError, "SAP_ERR_COUNT": FileFormatError,
    "SAP_ERR_TRUNCATED": FileFormatError,
    "SAP_ERR_STRUCTURALLY_SINGULAR": SingularError, "SAP_ERR_SINGULAR": SingularError,
    "SAP_ERR_BREAKDOWN": SingularError,
}


def _make_error(status: int, name: str, message: str) -> Error:
    return _ERROR_CLASSES.get(name, Error)(status, name, message)


_sap._set_error_factory(_make_error)

_STATUS_NAMES = {getattr(_sap, k): k for k in dir(_sap) if k.startswith("SAP_")}


def _warn(result: Tuple[int, str], what: str) -> int:
    status, message = result
    if status > 0:
        name = _STATUS_NAMES.get(status, str(status))
        warnings.warn(f"{what}: {name}: {message or 'see stats'}", SapWarning, stacklevel=3)
    return status


# ---- inputs ----------------------------------------------------------------------------------

def _is_cupy(obj: Any) -> bool:
    return type(obj).__module__.startswith(("cupy", "cupyx"))


def _to_host(obj: Any) -> Any:
    # The host functions (info, reorder) and a Solver over a SciPy matrix read host arrays:
    # a CuPy input is copied there.  A Solver over a CuPy matrix never does (_device_csr).
    return obj.get() if _is_cupy(obj) else obj


def _device_csr(A: Any) -> Tuple[int, int, Any, Any, Any]:
    """(n, nnz, indptr, indices, data) of a CuPy matrix as canonical CSR arrays on its GPU
    (int64 indices, float64 values: converted there, never through the host)."""
    import cupy
    import cupyx.scipy.sparse as csp
    if not csp.issparse(A):
        arr = cupy.asarray(A)
        if arr.ndim != 2:
            raise _make_error(-1, "SAP_ERR_INVALID", f"expected a 2-D matrix, got {arr.ndim} dimension(s)")
        A = csp.csr_matrix(arr)
    if A.dtype.kind == "c":
        raise _make_error(-16, "SAP_ERR_UNSUPPORTED", "complex matrices are not supported (float64 only)")
    if A.format != "csr":
        A = A.tocsr()
    nrows, ncols = A.shape
    if nrows != ncols:
        raise _make_error(-15, "SAP_ERR_NOT_SQUARE", f"the matrix is {nrows} x {ncols}, not square")
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()  # sorted column indices, no duplicates (on the GPU)
    indptr = cupy.ascontiguousarray(A.indptr, dtype=cupy.int64)
    indices = cupy.ascontiguousarray(A.indices, dtype=cupy.int64)
    data = cupy.ascontiguousarray(A.data, dtype=cupy.float64)
    return nrows, int(indices.shape[0]), indptr, indices, data


def _sync_cupy() -> None:
    # the library works on its own stream: the caller's queued work on the arrays first
    import cupy
    cupy.cuda.get_current_stream().synchronize()


def _csr_arrays(A: Any) -> Tuple[int, int, np.ndarray, np.ndarray, np.ndarray, bool]:
    """(nrows, ncols, indptr int64, indices int64, data float64, canonical) of A, without a
    copy where A already is a CSR of int64 indices and float64 values."""
    A = _to_host(A)
    if not _sp.issparse(A):
        arr = np.asarray(A)
        if arr.ndim != 2:
            raise _make_error(-1, "SAP_ERR_INVALID", f"expected a 2-D matrix, got {arr.ndim} dimension(s)")
        A = _sp.csr_array(arr)
    if np.iscomplexobj(A.data):
        raise _make_error(-16, "SAP_ERR_UNSUPPORTED", "complex matrices are not supported (float64 only)")
    if A.format != "csr":
        A = A.tocsr()
    nrows, ncols = A.shape
    indptr = np.ascontiguousarray(A.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(A.indices, dtype=np.int64)
    data = np.ascontiguousarray(A.data, dtype=np.float64)
    return nrows, ncols, indptr, indices, data, bool(A.has_canonical_format)


def _options(options: Dict[str, Any]) -> Tuple[list, str, int]:
    backend = str(options.pop("backend", "auto"))
    threads = int(options.pop("threads", 0))
    pairs = []
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        pairs.append((name, str(value)))
    return pairs, backend, threads


def _columns(xp: Any, b: Any, x0: Optional[Any], n: int) -> Tuple[Any, Any, int]:
    """(B, X, k): b and x0 (zeros when None) of shape (n,) or (n, k) as float64 arrays of the
    array module xp (numpy or cupy) in column-major order (C-ordered (k, n) arrays)."""
    bd = xp.asarray(b, dtype=xp.float64)
    if bd.ndim not in (1, 2) or bd.shape[0] != n:
        raise _make_error(-1, "SAP_ERR_INVALID", f"b has shape {bd.shape}; expected ({n},) or ({n}, k)")
    k = 1 if bd.ndim == 1 else bd.shape[1]
    bt = xp.ascontiguousarray(bd.T)
    if x0 is None:
        return bt, xp.zeros_like(bt), k
    xt = xp.array(xp.asarray(x0, dtype=xp.float64).T, order="C", copy=True)
    if xt.shape != bt.shape:
        raise _make_error(-1, "SAP_ERR_INVALID", f"x0 has shape {xt.T.shape}; expected {bd.shape}")
    return bt, xt, k


# ---- the solver ------------------------------------------------------------------------------

class Solver(LinearOperator):
    """The SaP solver over a square sparse matrix A (scipy.sparse: csr, csc, coo, ...).

    ``Solver(A, **options)``: options as :func:`solve`.  The setup (reorderings,
    band, factorization) runs at :meth:`setup` or at the first :meth:`solve`; later solves
    reuse it, :meth:`refactor` takes new values on the same pattern.  A Solver is a
    ``scipy.sparse.linalg.LinearOperator`` applying A^-1 (approximately, to the tolerance
    ``tol``), so it serves as the preconditioner ``M=`` of SciPy's Krylov solvers.
    """

    def __init__(self, A: Any, **options: Any) -> None:
        pairs, backend, threads = _options(dict(options))
        self._device = _is_cupy(A)
        if self._device:
            # a CuPy matrix: the library reads the device arrays (sap_solver_create_device)
            n, nnz, indptr, indices, data = _device_csr(A)
            _sync_cupy()
            self._core = _sap.device_solver(n, nnz, indptr.data.ptr, indices.data.ptr, data.data.ptr, pairs,
                                            backend, threads)
            nrows = ncols = n
        else:
            nrows, ncols, indptr, indices, data, canonical = _csr_arrays(A)
            self._core = _sap.Solver(nrows, ncols, indptr, indices, data, canonical, pairs, backend, threads)
            nnz = int(indices.shape[0])
        self._nnz = nnz
        self.last_status = 0
        super().__init__(dtype=np.float64, shape=(nrows, ncols))

    def setup(self) -> "Solver":
        """Runs the setup now (otherwise the first solve does); returns self."""
        self.last_status = _warn(self._core.setup(), "sap setup")
        return self

    def refactor(self, values: Any) -> "Solver":
        """New values on the pattern given at creation: a float64 array of the stored entries
        in that CSR order, or a sparse matrix with the same pattern.  Redoes the numeric
        setup only."""
        if self._device:
            import cupy
            import cupyx.scipy.sparse as csp
            if _sp.issparse(values):
                values = csp.csr_matrix(values)
            if csp.issparse(values):
                values = _device_csr(values)[4]
            values = cupy.ascontiguousarray(cupy.asarray(values), dtype=cupy.float64).ravel()
            if values.shape[0] != self._nnz:
                raise _make_error(-1, "SAP_ERR_INVALID", f"refactor: expected {self._nnz} values (the matrix's "
                                  f"stored entries), got {values.shape[0]}")
            _sync_cupy()
            self.last_status = _warn(self._core.refactor_device(values.data.ptr), "sap refactor")
            return self
        if _sp.issparse(values) or _is_cupy(values):
            _, _, _, _, values, _ = _csr_arrays(values)
        values = np.ascontiguousarray(values, dtype=np.float64)
        self.last_status = _warn(self._core.refactor(values), "sap refactor")
        return self

    def _solve_device(self, b: Any, x0: Optional[Any]) -> Any:
        """The device path: b, x0 and x in GPU memory; NumPy b comes back as NumPy x."""
        import cupy
        bt, xt, k = _columns(cupy, b, x0, self.shape[0])
        if k > 0:
            _sync_cupy()
            self.last_status = _warn(self._core.solve_device(bt.data.ptr, xt.data.ptr, k), "sap solve")
        return xt.T if _is_cupy(b) else xt.T.get()

    def solve(self, b: Any, x0: Optional[Any] = None) -> Any:
        """x with A x = b; b 1-D (n) or 2-D (n, k: k right-hand sides).  NumPy in, NumPy out
        (CuPy in, CuPy out).  A Solver over a CuPy matrix solves on the GPU: b and x
        never leave it (``stats["device_arrays"]`` tells where the data went)."""
        if self._device:
            return self._solve_device(b, x0)
        on_gpu = _is_cupy(b)
        bt, xt, k = _columns(np, _to_host(b), None if x0 is None else _to_host(x0), self.shape[0])
        if k > 0:
            self.last_status = _warn(self._core.solve(bt, xt, k), "sap solve")
        x = xt.T
        if on_gpu:
            import cupy
            return cupy.asarray(x)
        return x

    @property
    def stats(self) -> Dict[str, Any]:
        """The profile and the choices of the last setup/solve: method, reason, bandwidths,
        partitions, precision, Krylov method, iterations, residual, times (s) with the
        papers' names, every attempt tried, and the host<->device transfer counters; for a
        Solver over a CuPy matrix also ``device_arrays`` (sap_solver_device_stats: the
        download of A, ``download_bytes`` = 0 while none was needed and ``download_reason``
        when one was, the bytes that went up by phase, ``a_h2d_bytes`` = 0 when no byte of
        A went host->device, device and host solves) and ``times["download"]``."""
        return self._core.stats()

    def as_cupy_operator(self) -> Any:
        """This solver as a ``cupyx.scipy.sparse.linalg.LinearOperator`` (CuPy vectors in and
        out), the preconditioner ``M=`` of CuPy's Krylov solvers: on the GPU for a Solver
        over a CuPy matrix (through host copies for one over a SciPy matrix)."""
        from cupyx.scipy.sparse.linalg import LinearOperator as CupyOperator
        return CupyOperator(self.shape, matvec=self.solve, matmat=self.solve, dtype=np.float64)

    # LinearOperator
    def _matvec(self, b: np.ndarray) -> np.ndarray:
        return self.solve(np.ravel(b))

    def _matmat(self, B: np.ndarray) -> np.ndarray:
        return self.solve(B)

    def _adjoint(self) -> LinearOperator:
        raise NotImplementedError("sap.Solver applies A^-1 only (no transpose solve)")


def solve(A: Any, b: Any, **options: Any) -> Any:
    """Solves A x = b for a square sparse A (scipy.sparse csr/csc/coo/..., or CuPy sparse)
    and b of shape (n,) or (n, k); returns x of b's shape (and of b's array library).

    Options: the names of ``sap solve --opt`` / ``sap_solver_options_set`` (method,
    fallback, db, scale, cm, drop, partitions, third_stage, precision, boost_threshold,
    boost_value, krylov, tol, maxit, memory_limit, host_small, host_direct, long_step;
    see :func:`options_help`) plus ``backend`` and ``threads``.

    A CuPy sparse matrix (``cupyx.scipy.sparse``) and CuPy b give a CuPy x without copies
    of A, b or x through the host: the library reads the device arrays.  Krylov + Jacobi
    (``method="jacobi"``, or the automatic plan when every row is diagonally dominant)
    reads no host copy of A at all: the statistics of the plan and the preconditioner come
    from the device.  The other methods download A once for the host stages of the setup
    (DB, CM, the preconditioner's band: ``stats["device_arrays"]["download_reason"]``,
    ``stats["times"]["download"]``); the Krylov iteration, the preconditioner's apply and
    the residual checks run on the GPU."""
    return Solver(A, **options).solve(b)


# ---- matrices --------------------------------------------------------------------------------

def _from_csr(c: Any, what: str) -> _sp.csr_array:
    nrows, ncols = c.shape
    nnz = c.nnz
    indptr = np.empty(nrows + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int64)
    data = np.empty(nnz, dtype=np.float64)
    c.export(indptr, indices, data)
    _warn(c.status, what)
    return _sp.csr_array((data, indices, indptr), shape=(nrows, ncols))


def gen(spec: str) -> _sp.csr_array:
    """A generated matrix, e.g. ``gen("banded:N=1000,K=10,d=1")`` or
    ``gen("poisson2d:n=50")`` (``gen:`` prefix optional; see :func:`gen_help`)."""
    if not spec.startswith("gen:"):
        spec = "gen:" + spec
    return _from_csr(_sap.load(spec), "sap gen")


def read_mm(path: str) -> _sp.csr_array:
    """Reads a Matrix Market file (.mtx or .mtx.gz) through the library's reader."""
    import os
    path = os.fspath(path)
    if path.startswith("gen:"):
        raise _make_error(-1, "SAP_ERR_INVALID", "read_mm takes a file path (use sap.gen for generators)")
    return _from_csr(_sap.load(path), "sap read_mm")


def info(A: Any) -> Dict[str, Any]:
    """The matrix statistics of the papers (``sap info``): sizes, bandwidths, symmetry,
    diagonal dominance, SPD estimate, norms."""
    nrows, ncols, indptr, indices, data, canonical = _csr_arrays(A)
    return _sap.info(nrows, ncols, indptr, indices, data, canonical)


_DB_MODES = {"none": 0, "off": 0, "product": 1, "transversal": 2}


def reorder(A: Any, db: Any = "product", scale: bool = True, cm: bool = True, drop: float = 1.0,
            partitions: int = 1) -> SimpleNamespace:
    """The SaP reorderings of a square A (``sap reorder``): diagonal boosting (``db``:
    "product", "transversal" or "none"/False), Cuthill-McKee on A + A^T, drop-off keeping
    the fraction ``drop`` of ||A||_F^2 (1: none) and a third stage over ``partitions``
    blocks.  Returns a namespace with ``row_perm``/``col_perm`` (new -> old),
    ``row_scale``/``col_scale`` (None without scaling), ``bandwidths`` (half-bandwidth
    after each stage run), ``stages`` (their statistics), ``K_drop``, ``kept_fraction``,
    ``partitions``, ``offsets``, ``Ki``.  The reordered matrix is
    ``A[row_perm][:, col_perm]`` scaled by ``row_scale[row_perm]`` and ``col_scale[col_perm]``."""
    n, m, indptr, indices, data, canonical = _csr_arrays(A)
    if n != m:
        raise _make_error(-15, "SAP_ERR_NOT_SQUARE", f"reorder needs a square matrix, got {n} x {m}")
    if db is False or db is None:
        db = "none"
    if db is True:
        db = "product"
    if str(db).lower() not in _DB_MODES:
        raise _make_error(-1, "SAP_ERR_INVALID", f"db must be one of {sorted(_DB_MODES)}, got {db!r}")
    r = _sap.reorder(n, indptr, indices, data, canonical, _DB_MODES[str(db).lower()], int(bool(scale)),
                     int(bool(cm)), float(drop), int(partitions))

    def ints(v: Optional[bytes]) -> Optional[np.ndarray]:
        return None if v is None else np.frombuffer(v, dtype=np.int64).copy()

    def floats(v: Optional[bytes]) -> Optional[np.ndarray]:
        return None if v is None else np.frombuffer(v, dtype=np.float64).copy()

    _warn((r["status"], ""), "sap reorder")
    return SimpleNamespace(row_perm=ints(r["row_perm"]), col_perm=ints(r["col_perm"]),
                           row_scale=floats(r["row_scale"]), col_scale=floats(r["col_scale"]),
                           stages=r["stages"], bandwidths={k: v["K"] for k, v in r["stages"].items()},
                           K_drop=r["K_drop"], kept_fraction=r["kept_fraction"], partitions=r["partitions"],
                           offsets=ints(r["offsets"]), Ki=ints(r["Ki"]), time=r["time"])


def build_info() -> Dict[str, Any]:
    """The library's version and compiled-in features."""
    return _sap.build_info()


def options_help() -> str:
    """The solver option names, values and defaults (``sap_solver_options_help``)."""
    return _sap.options_help()


def gen_help() -> str:
    """The generators and their keys (``sap_gen_spec_help``)."""
    return _sap.gen_help()
