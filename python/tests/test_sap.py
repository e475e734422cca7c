"""pytest suite of the sap package (CPU; the GPU tests are marked gpu)."""
import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import sap
from conftest import matrix_dir

# Real matrices of ../shared/matrices (nonsingular, small enough for CI) compared with spsolve.
REAL = ["494_bus", "west0479", "bcsstk06", "utm300", "fs_183_6", "olm500", "nos5"]


def real_matrix(name):
    path = matrix_dir() / f"{name}.mtx.gz"
    if not path.exists():
        pytest.skip(f"{path} not found (set SAP_MATRIX_DIR to the shared matrices)")
    return sap.read_mm(path)


def rel_res(A, x, b):
    return np.linalg.norm(A @ x - b) / np.linalg.norm(b)


def random_system(n=400, seed=0):
    A = sp.random(n, n, density=0.02, random_state=seed, format="csr") + 10 * sp.eye(n, format="csr")
    b = np.random.default_rng(seed).standard_normal(n)
    return A, b


@pytest.mark.parametrize("name", REAL)
def test_real_matrices_match_spsolve(name):
    A = real_matrix(name)
    n = A.shape[0]
    xstar = np.random.default_rng(1).standard_normal(n)
    b = A @ xstar
    x = sap.solve(A, b, tol=1e-12)
    xref = spla.spsolve(sp.csc_matrix(A), b)
    # both solve the same system: compare backward errors and the solutions themselves
    assert rel_res(A, x, b) < 1e-8
    cond_scale = max(1.0, np.linalg.norm(xref))
    assert np.linalg.norm(x - xref) / cond_scale < 1e-4 * max(1.0, np.linalg.cond(A.toarray()) * 1e-8)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "bsr"])
def test_formats(fmt):
    A, b = random_system()
    x = sap.solve(A.asformat(fmt), b)
    assert rel_res(A, x, b) < 1e-9


def test_int32_and_noncanonical_inputs():
    A, b = random_system(200)
    A32 = sp.csr_matrix(A)
    A32.indices = A32.indices.astype(np.int32)
    A32.indptr = A32.indptr.astype(np.int32)
    assert rel_res(A, sap.solve(A32, b), b) < 1e-9
    # unsorted columns with duplicates: the library sorts and sums them
    rows = np.array([0, 0, 0, 1, 1, 2])
    cols = np.array([2, 0, 0, 1, 0, 2])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 1.0, 6.0])
    C = sp.csr_matrix((vals, cols, np.array([0, 3, 5, 6])), shape=(3, 3))
    C.has_sorted_indices = False
    dense = np.array([[5.0, 0, 1], [1, 4, 0], [0, 0, 6]])
    x = sap.solve(C, np.ones(3))
    assert np.allclose(dense @ x, 1.0)
    assert np.allclose(sap.solve(dense, np.ones(3)), x)


def test_many_rhs_and_shapes():
    A, _ = random_system(300)
    B = np.random.default_rng(2).standard_normal((300, 4))
    X = sap.solve(A, B)
    assert X.shape == (300, 4)
    assert np.linalg.norm(A @ X - B) / np.linalg.norm(B) < 1e-9
    x1 = sap.solve(A, B[:, 1])
    assert x1.shape == (300,)
    assert np.allclose(x1, X[:, 1], rtol=1e-8, atol=1e-10)
    XF = sap.solve(A, np.asfortranarray(B))
    assert np.allclose(XF, X)


def test_solver_reuse_refactor_and_stats():
    A, b = random_system(500, seed=3)
    S = sap.Solver(A, tol=1e-12)
    assert S.setup() is S
    x = S.solve(b)
    assert rel_res(A, x, b) < 1e-10
    st = S.stats
    for key in ("method", "reason", "K_original", "K_cm", "partitions", "times", "tried", "transfers",
                "relative_residual", "iterations", "backend"):
        assert key in st
    assert st["n"] == 500 and st["status"] == "SAP_OK"
    assert st["tried"] and st["tried"][0]["method"] == st["method"]
    # T_stats and the plan's parts of it (probe, structure passes) are seconds, the parts within it
    t = st["times"]
    for key in ("stats", "probe", "structure", "analysis", "db", "cm", "setup", "solve"):
        assert key in t and t[key] >= 0
    assert t["probe"] + t["structure"] <= t["stats"] + 1e-9
    # new values on the same pattern
    A2 = A.copy()
    A2.data = A2.data * 2.0
    S.refactor(A2.data)
    x2 = S.solve(b)
    assert rel_res(A2, x2, b) < 1e-10
    S.refactor(A)  # a sparse matrix with the same pattern works too
    assert rel_res(A, S.solve(b), b) < 1e-10
    with pytest.raises(sap.InvalidError):
        S.refactor(np.ones(3))
    # an initial guess
    assert rel_res(A, S.solve(b, x0=x), b) < 1e-10


def test_forced_methods_and_options():
    A = sap.gen("banded:N=2000,K=20,d=1")
    b = np.ones(A.shape[0])
    for method in ("sap-d", "sap-c", "band-lu", "band-pivot"):
        S = sap.Solver(A, method=method, fallback=False, partitions=4, tol=1e-10, threads=2, backend="cpu")
        x = S.solve(b)
        assert rel_res(A, x, b) < 1e-8, method
        assert S.stats["method"] == method


def test_linear_operator_preconditioner():
    A = sap.gen("poisson2d:n=40")
    b = np.ones(A.shape[0])
    M = sap.Solver(A, tol=1e-4, method="sap-d", fallback=False, partitions=2)
    assert isinstance(M, spla.LinearOperator)
    x, info = spla.gmres(A, b, M=M, rtol=1e-10, atol=0) if _has_rtol() else spla.gmres(A, b, M=M, tol=1e-10)
    assert info == 0
    assert rel_res(A, x, b) < 1e-9
    y = M @ b
    assert rel_res(A, y, b) < 1e-3


def _has_rtol():
    import inspect
    return "rtol" in inspect.signature(spla.gmres).parameters


def test_info_reorder_gen_read_mm(tmp_path):
    A = sap.gen("banded:N=300,K=5,d=1")
    assert isinstance(A, sp.csr_array) and A.shape == (300, 300)
    st = sap.info(A)
    assert st["half_bandwidth"] == 5 and st["nnz"] == A.nnz
    # a permuted band: reorder finds a narrow band again
    p = np.random.default_rng(0).permutation(300)
    B = sp.csr_array(A[p][:, p])
    r = sap.reorder(B)
    assert r.bandwidths["original"] > 50
    assert r.bandwidths["cm"] <= 12
    assert sorted(r.row_perm) == list(range(300)) and sorted(r.col_perm) == list(range(300))
    # the permuted, scaled matrix has the stated bandwidth
    R = sp.csr_array(B[r.row_perm][:, r.col_perm])
    assert sap.info(R)["half_bandwidth"] == r.bandwidths["cm"]
    r2 = sap.reorder(B, db="none", drop=0.999, partitions=4)
    assert r2.row_scale is None and r2.partitions == 4 and len(r2.Ki) == 4
    # Matrix Market through the library reader
    path = tmp_path / "m.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 2\n2 2 3\n3 3 4\n1 3 1\n")
    M = sap.read_mm(path)
    assert np.allclose(M.toarray(), [[2, 0, 1], [0, 3, 0], [0, 0, 4]])


def test_errors_carry_status_and_message(tmp_path):
    A, b = random_system(50)
    with pytest.raises(sap.InvalidError) as e:
        sap.solve(A, b, method="nope")
    assert e.value.name == "SAP_ERR_INVALID" and e.value.status == -1 and "method" in e.value.message
    assert isinstance(e.value, sap.Error) and isinstance(e.value, ValueError)
    with pytest.raises(sap.InvalidError, match="not square"):
        sap.solve(sp.random(3, 4, density=0.5, format="csr"), np.ones(3))
    with pytest.raises(sap.InvalidError):
        sap.solve(A, np.ones(49))
    with pytest.raises(sap.InvalidError):
        sap.solve(A, b, tol="abc")
    with pytest.raises(sap.InvalidError):
        sap.solve(A, b, backend="tpu")
    with pytest.raises(sap.InvalidError):
        sap.solve(A.astype(np.complex128), b)
    bad = A.copy()
    bad.data[0] = np.nan
    with pytest.raises(sap.InvalidError) as e:
        sap.solve(bad, b)
    assert e.value.name == "SAP_ERR_NONFINITE"
    with pytest.raises(sap.SingularError):
        sap.solve(sp.csr_matrix(np.array([[1.0, 1.0], [0.0, 0.0]])), np.ones(2), fallback=True)
    with pytest.raises(sap.FileFormatError):
        sap.read_mm(tmp_path / "missing.mtx")
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n")
    with pytest.raises(sap.FileFormatError) as e:
        sap.read_mm(tmp_path / "bad.mtx")
    assert e.value.name in ("SAP_ERR_COUNT", "SAP_ERR_TRUNCATED")
    with pytest.raises(sap.InvalidError):
        sap.gen("banded:N=10,bogus=1")
    with pytest.raises(sap.DeviceError if not sap.build_info()["cuda"] else sap.Error):
        sap.solve(A, b, backend="cuda")


def test_not_converged_warns():
    A = sap.gen("poisson2d:n=30")
    b = np.ones(A.shape[0])
    with pytest.warns(sap.SapWarning, match="SAP_WARN"):
        S = sap.Solver(A, method="jacobi", fallback=False, maxit=2)
        S.solve(b)
    assert S.stats["status"].startswith("SAP_WARN")


def test_gil_released_during_solves():
    """Solves in threads overlap with Python work in the main thread (the GIL is released)."""
    A = sap.gen("banded:N=20000,K=40,d=1")
    b = np.ones(A.shape[0])
    solvers = [sap.Solver(A, method="sap-d", fallback=False, partitions=2, threads=1) for _ in range(2)]
    ticks = []
    done = threading.Event()

    def work(S):
        S.setup()
        for _ in range(3):
            S.solve(b)

    threads = [threading.Thread(target=work, args=(S,)) for S in solvers]
    for t in threads:
        t.start()

    def watcher():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    w = threading.Thread(target=watcher)
    w.start()
    for t in threads:
        t.join()
    done.set()
    w.join()
    assert len(ticks) > 3
    for S in solvers:
        assert rel_res(A, S.solve(b), b) < 1e-8


def test_build_info_and_help():
    info = sap.build_info()
    assert info["version"] == sap.__version__
    assert "method" in sap.options_help()
    assert "banded" in sap.gen_help()


@pytest.mark.gpu
def test_cupy_inputs():
    import cupy
    import cupyx.scipy.sparse as csp
    A = sap.gen("banded:N=50000,K=50,d=1")
    b = np.ones(A.shape[0])
    Ad = csp.csr_matrix(sp.csr_matrix(A))
    x = sap.solve(Ad, cupy.asarray(b), backend="cuda", host_small=False)
    assert isinstance(x, cupy.ndarray)
    assert rel_res(A, cupy.asnumpy(x), b) < 1e-8


@pytest.mark.gpu
def test_cuda_backend_matches_cpu():
    A = real_matrix("olm500")
    b = A @ np.ones(A.shape[0])
    xg = sap.solve(A, b, backend="cuda", host_small=False, tol=1e-12)
    xc = sap.solve(A, b, backend="cpu", tol=1e-12)
    assert rel_res(A, xg, b) < 1e-8 and rel_res(A, xc, b) < 1e-8


@pytest.mark.gpu
def test_cupy_krylov_preconditioner():
    import cupy
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as cspla
    A = sap.gen("poisson2d:n=60")
    Ad = csp.csr_matrix(sp.csr_matrix(A))
    b = cupy.ones(A.shape[0])
    M = sap.Solver(A, tol=1e-4, backend="cuda").as_cupy_operator()
    # CuPy 13+ names the tolerance rtol (older versions: tol)
    import inspect
    kw = {"rtol": 1e-10} if "rtol" in inspect.signature(cspla.gmres).parameters else {"tol": 1e-10}
    x, info = cspla.gmres(Ad, b, M=M, **kw)
    assert info == 0
    assert rel_res(A, cupy.asnumpy(x), np.ones(A.shape[0])) < 1e-8


def test_device_entry_refuses_a_cpu_context():
    # the C layer of Solver(cupy matrix): on a cpu context the device pointers are refused
    # with a clear error before anything reads them
    A = sp.csr_matrix(sap.gen("poisson2d:n=5"))
    rp, ci, va = (np.ascontiguousarray(A.indptr, np.int64), np.ascontiguousarray(A.indices, np.int64),
                  np.ascontiguousarray(A.data, np.float64))
    with pytest.raises(sap.InvalidError, match="cuda context"):
        sap._sap.device_solver(A.shape[0], A.nnz, rp.ctypes.data, ci.ctypes.data, va.ctypes.data, [], "cpu", 0)


def _cupy_system(spec):
    import cupy
    import cupyx.scipy.sparse as csp
    A = sp.csr_matrix(sap.gen(spec))
    b = np.sin(0.37 * np.arange(A.shape[0])) + 1.5
    return A, b, csp.csr_matrix(A), cupy.asarray(b)


@pytest.mark.gpu
@pytest.mark.parametrize("spec,method", [("banded:N=20000,K=20,d=1", "sap-d"), ("poisson2d:n=120", "sap-d"),
                                         ("poisson2d:n=120", "jacobi")])
def test_cupy_solve_reads_no_host_copy_of_a(spec, method):
    import cupy
    A, b, Ad, bd = _cupy_system(spec)
    n, nnz = A.shape[0], A.nnz
    S = sap.Solver(Ad, method=method, backend="cuda")
    x = S.solve(bd)
    assert isinstance(x, cupy.ndarray)
    st = S.stats
    dv = st["device_arrays"]
    # sap-d: A came down once (int64 indices, float64 values) for the host stages, and the
    # stats say why; jacobi: never (the statistics and the diagonal from the device).  None
    # of it went up, nothing went up during the solve, b and x never went through the host
    if method == "jacobi":
        assert dv["download_bytes"] == 0 and dv["download_reason"] == ""
    else:
        assert dv["download_bytes"] == 8 * (n + 1 + 2 * nnz)
        assert method in dv["download_reason"]
        assert st["times"]["download"] > 0
    assert dv["a_h2d_bytes"] == 0 and dv["solve_h2d_bytes"] == 0 and dv["host_solve_bytes"] == 0
    assert dv["device_solves"] == 1 and dv["host_solves"] == 0, dv["host_reason"]
    # every byte that went up is the preconditioner's data or the permutations
    assert st["transfers"]["h2d_bytes"] == dv["setup_h2d_bytes"]
    assert rel_res(A, cupy.asnumpy(x), b) < 1e-8
    xh = sap.solve(A, b, method=method, backend="cuda")
    assert np.linalg.norm(cupy.asnumpy(x) - xh) <= 1e-5 * np.linalg.norm(xh)
    # reuse, two right-hand sides, new values on the same pattern
    x2 = S.solve(cupy.stack([bd, 2 * bd], axis=1))
    assert x2.shape == (n, 2) and rel_res(A, cupy.asnumpy(x2[:, 1]), 2 * b) < 1e-8
    S.refactor(2 * Ad.data)
    x3 = S.solve(bd)
    assert rel_res(A, 2 * cupy.asnumpy(x3), b) < 1e-8
    dv = S.stats["device_arrays"]
    assert dv["a_h2d_bytes"] == 0 and dv["solve_h2d_bytes"] == 0 and dv["host_solves"] == 0
    assert dv["device_solves"] == 4


@pytest.mark.gpu
def test_cupy_solve_poisson_reads_no_host_copy_of_a():
    # sap.solve(cupy A, cupy b) with the default options (the automatic plan) on Poisson 3D:
    # every row diagonally dominant, so Krylov + Jacobi on the device CSR; A never comes down
    import cupy
    A, b, Ad, bd = _cupy_system("poisson3d:n=30")
    x = sap.solve(Ad, bd)
    assert isinstance(x, cupy.ndarray) and rel_res(A, cupy.asnumpy(x), b) < 1e-8
    S = sap.Solver(Ad)  # what sap.solve does, kept for its stats
    xs = S.solve(bd)
    st = S.stats
    dv, tr = st["device_arrays"], st["transfers"]
    assert st["method"] == "jacobi", st["reason"]
    assert dv["download_bytes"] == 0 and dv["download_reason"] == "", dv["download_reason"]
    assert dv["a_h2d_bytes"] == 0 and dv["solve_h2d_bytes"] == 0 and dv["host_solves"] == 0
    # what came down: the statistics' few scalars and the solve's reduction scalars (less
    # than one vector), never A; what went up: nothing of A
    assert 0 < dv["stats_d2h_bytes"] < 4096
    assert tr["d2h_bytes"] < 8 * A.shape[0]
    assert tr["h2d_bytes"] == dv["setup_h2d_bytes"]
    xh = sap.solve(A, b, method="jacobi", backend="cuda")
    assert np.linalg.norm(cupy.asnumpy(xs) - xh) <= 1e-6 * np.linalg.norm(xh)
    assert np.linalg.norm(cupy.asnumpy(x) - xh) <= 1e-6 * np.linalg.norm(xh)


@pytest.mark.gpu
def test_cupy_method_without_device_solve_says_so():
    import cupy
    A, b, Ad, bd = _cupy_system("banded:N=3000,K=10,d=1")
    S = sap.Solver(Ad, method="band-pivot", backend="cuda")
    x = S.solve(bd)
    assert isinstance(x, cupy.ndarray) and rel_res(A, cupy.asnumpy(x), b) < 1e-8
    dv = S.stats["device_arrays"]
    assert dv["host_solves"] == 1 and dv["device_solves"] == 0
    assert "band-pivot" in dv["host_reason"]
    assert dv["host_solve_bytes"] > 0  # b and x went through the host, and the stats say so
