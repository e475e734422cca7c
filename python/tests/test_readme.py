"""Runs every code block of the repository's README.md marked runnable (a line
``<!-- runnable -->`` right before its fence): python blocks with this interpreter, sh
blocks with bash from the repository root.  In sh blocks ``build/`` means the build folder
(SAP_BUILD_DIR, default build).  A block that needs the PETSc plugin is skipped, saying so,
where the build has none."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def runnable_blocks():
    text = README.read_text()
    pat = re.compile(r"<!-- runnable -->\n```(\w+)\n(.*?)\n```", re.S)
    return [(m.group(1), m.group(2), text[: m.start()].count("\n") + 2) for m in pat.finditer(text)]


BLOCKS = runnable_blocks()


def test_readme_has_runnable_blocks():
    langs = [lang for lang, _, _ in BLOCKS]
    assert "python" in langs and "sh" in langs, f"README.md runnable blocks: {langs}"


@pytest.mark.parametrize("lang,code,line", BLOCKS, ids=[f"README.md:{b[2]}" for b in BLOCKS])
def test_readme_block(lang, code, line, tmp_path):
    build = os.environ.get("SAP_BUILD_DIR", "build")
    if lang == "python":
        cmd = [sys.executable, "-c", code]
    elif lang == "sh":
        if "petsc" in code and not (ROOT / build / "petsc" / "petsc_laplacian").exists():
            pytest.skip(f"README.md:{line}: the build {build}/ has no PETSc plugin (PETSc not installed)")
        code = re.sub(r"(?<![\w-])build/", build.rstrip("/") + "/", code)
        cmd = ["bash", "-euo", "pipefail", "-c", code]
    else:
        pytest.fail(f"README.md:{line}: runnable block of unknown language {lang}")
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"README.md:{line} ({lang}) failed:\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip(), f"README.md:{line} printed nothing"
