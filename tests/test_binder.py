"""Binder builds the labs from binder/ alone, and every lab runs in what it builds.

repo2docker reads binder/runtime.txt for the Python version, makes a fresh environment, and runs
binder/postBuild from the repository root with that environment first on PATH. This test does the same
in a temporary venv and a copy of the repository, then executes each notebook in labs/ on that venv's
own kernel, and checks that JupyterLab there has the widget extensions prebuilt (no `jupyter lab build`).
Binder installs no PyTorch: lab 13, which runs it, must stop at its first cell and say how to install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BINDER = REPO / "binder"
LABS = sorted((REPO / "labs").glob("*.ipynb"))
BUILD_TIMEOUT_S = 900

# Runs inside the binder venv: execute one notebook on its python3 kernel, then ask that same kernel
# where it runs and where gradlab comes from.
EXECUTE = r"""
import json, sys, time
import nbclient, nbformat
path, workdir = sys.argv[1], sys.argv[2]
notebook = nbformat.read(path, as_version=4)
notebook.cells.append(nbformat.v4.new_code_cell("import sys, gradlab; print(sys.prefix); print(gradlab.__file__)"))
started = time.perf_counter()
nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": workdir}}).execute()
prefix, gradlab_file = notebook.cells[-1].outputs[0]["text"].split()
print(json.dumps({"seconds": time.perf_counter() - started, "prefix": prefix, "gradlab": gradlab_file}))
"""


def runtime_python() -> str:
    """The interpreter runtime.txt asks for: this one if it matches, else pythonX.Y on PATH."""
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-3"), f"binder/runtime.txt should name python-3.X, not {runtime!r}"
    wanted = runtime.removeprefix("python-")
    if ".".join(map(str, sys.version_info[:2])) == ".".join(wanted.split(".")[:2]):
        return sys.executable
    found = shutil.which(f"python{wanted}")
    if found is None:
        pytest.skip(f"binder/runtime.txt asks for Python {wanted}; this machine has {sys.version.split()[0]}")
    return found


def copy_of_repo(dest: Path) -> Path:
    """The files a clone would have: tracked or about to be (not ignored); no build output, no .git."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True)
    if listed.returncode != 0:   # not a git checkout: copy all but the usual build output
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(
            ".git", "test-artifacts", "__pycache__", "*.egg-info", ".venv", "build", "dist"))
        return dest
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def binder_env(venv: Path, home: Path) -> dict:
    """A user's environment on Binder: the new venv first on PATH, nothing of the venv running pytest."""
    outer_bin = str(Path(sys.prefix) / "bin")
    path = [str(venv / "bin")] + [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != outer_bin]
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "IPYTHON", "JPY_", "PYTHON", "VIRTUAL_ENV", "CONDA"))}
    env.update(PATH=os.pathsep.join(path), VIRTUAL_ENV=str(venv), HOME=str(home),
               JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"))
    home.mkdir(parents=True, exist_ok=True)
    return env


def needs_pytorch(lab: Path) -> bool:
    """Lab 13 runs PyTorch beside gradlab; the Binder image has none (its CUDA build is gigabytes)."""
    return "import torch" in lab.read_text(encoding="utf-8")


def assert_says_how_to_install_pytorch(venv: Path, repo: Path, lab: Path, env: dict, tmp_path: Path) -> None:
    """Without PyTorch such a lab stops at its first cell, with a message that says how to install it."""
    result = subprocess.run([str(venv / "bin" / "python"), "-c", EXECUTE, str(repo / "labs" / lab.name), str(tmp_path)],
                            cwd=repo, env=env, timeout=600, capture_output=True, text=True)
    said = result.stdout + result.stderr
    assert result.returncode != 0 and "pip install torch" in said and "not installed" in said, \
        f"{lab.name} without PyTorch should stop at its first cell saying 'pip install torch':\n{said[-3000:]}"


def run(command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (f"{command} exited with {result.returncode}\n"
                                    f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}")
    return result


@pytest.mark.slow
def test_binder_builds_and_runs_every_lab(tmp_path):
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable (git update-index --chmod=+x)"
    assert LABS, "no notebooks in labs/"
    timings = {}

    started = time.perf_counter()
    venv = tmp_path / "venv"
    run([runtime_python(), "-m", "venv", str(venv)])
    repo = copy_of_repo(tmp_path / "repo")
    env = binder_env(venv, tmp_path / "home")
    run([str(repo / "binder" / "postBuild")], cwd=repo, env=env, timeout=BUILD_TIMEOUT_S)
    timings["build"] = time.perf_counter() - started

    # JupyterLab 4 loads ipywidgets' and anywidget's front ends as prebuilt extensions: no build step.
    extensions = run([str(venv / "bin" / "jupyter"), "labextension", "list"], cwd=repo, env=env)
    listing = extensions.stdout + extensions.stderr
    for name in ("@jupyter-widgets/jupyterlab-manager", "anywidget"):
        line = next((line for line in listing.splitlines() if name + " v" in line), None)
        assert line is not None and "enabled" in line and "OK" in line, \
            f"{name} is not an enabled prebuilt extension in the binder venv:\n{listing}"

    has_torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], env=env).returncode == 0
    for lab in LABS:
        started = time.perf_counter()
        if needs_pytorch(lab) and not has_torch:
            assert_says_how_to_install_pytorch(venv, repo, lab, env, tmp_path)
            timings[lab.name + " (no PyTorch: its first cell says pip install torch)"] = time.perf_counter() - started
            continue
        result = run([str(venv / "bin" / "python"), "-c", EXECUTE, str(repo / "labs" / lab.name), str(tmp_path)],
                     cwd=repo, env=env, timeout=600)
        report = json.loads(result.stdout.strip().splitlines()[-1])
        timings[lab.name] = time.perf_counter() - started
        assert Path(report["prefix"]).resolve() == venv.resolve(), f"{lab.name} ran on a kernel outside the binder venv: {report}"
        assert Path(report["gradlab"]).is_relative_to(repo), f"{lab.name} imported another gradlab: {report}"

    print("\nbinder timings: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items()))
