"""The wheel holds everything the package needs: built from this tree (as ``make dist`` builds it) and installed into
a fresh virtual environment with no project source on its path, it has every file of ``src/claudecode_model``, its
version and entry points, and ``claudecode-model demo`` runs from it through the real CLI, offline.

The fresh environment gets the locked dependencies of the running one (``make setup``'s, hash-checked) through one
``.pth`` line naming its ``site-packages``: that folder's own ``.pth`` files, the editable install's among them, are
not read, so ``claudecode_model`` can only come from the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import pytest

from claudecode_model._version import __version__

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "claudecode_model"


def package_files() -> set[str]:
    """The package's files in this tree, relative to it (byte code left out)."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def run(argv: Sequence[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the wheel built from this tree."""
    work = tmp_path_factory.mktemp("wheel")
    built = run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", work / "dist"], ROOT)
    assert built.returncode == 0, built.stderr
    [wheel] = (work / "dist").glob("claudecode_model-*.whl")
    created = run([sys.executable, "-m", "venv", "--without-pip", work / "venv"], work)
    assert created.returncode == 0, created.stderr
    python = work / "venv" / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work).stdout.strip()
    (Path(purelib) / "locked_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip: list[str | Path] = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        wheel,
    ]
    installed = run(pip, work)
    assert installed.returncode == 0, installed.stderr
    return work / "venv"


PROBE = """\
import importlib.metadata, json, pathlib
import claudecode_model
distribution = importlib.metadata.distribution("claudecode-model")
package = pathlib.Path(claudecode_model.__file__).parent
files = [p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
print(json.dumps({
    "package": str(package),
    "files": sorted(p.relative_to(package).as_posix() for p in files),
    "version": claudecode_model.__version__,
    "metadata_version": distribution.version,
    "entry_points": sorted(f"{e.group} {e.name} = {e.value}" for e in distribution.entry_points),
}))
"""


def test_the_installed_wheel_has_every_file_its_version_and_entry_points(venv: Path) -> None:
    probed = run([venv / "bin" / "python", "-c", PROBE], venv)
    assert probed.returncode == 0, probed.stderr
    found = json.loads(probed.stdout)

    assert Path(found["package"]).is_relative_to(venv)
    assert set(found["files"]) == package_files()
    assert found["version"] == found["metadata_version"] == __version__
    assert found["entry_points"] == [
        "console_scripts claudecode-model = claudecode_model.cli:main",
        "pytest11 claudecode_model = claudecode_model.testing.pytest_plugin",
    ]


@pytest.mark.cli
def test_the_installed_command_runs_the_demo_offline(venv: Path) -> None:
    demo = run([venv / "bin" / "claudecode-model", "demo"], venv)

    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "Offline backend: http://127.0.0.1:" in demo.stdout
    assert "Answer: claudecode-model lets a pydantic-ai agent run on Claude through the Claude Code CLI" in demo.stdout
