"""`pip install` of the package, offline (--no-index: the in-tree build backend needs nothing from
an index), into a scratch folder: a pure wheel without QWEN_GDN_LIBRARY at build time, and one
with the library bundled when it is set; the bundled copy is then found with no variable set."""

import glob
import os
import subprocess
import sys

from stand_ins import PACKAGE_ROOT

import qwen_gdn


def pip_install(target, library):
    env = dict(os.environ)
    env.pop("QWEN_GDN_LIBRARY", None)
    if library:
        env["QWEN_GDN_LIBRARY"] = library
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-cache-dir",
                        "--disable-pip-version-check", "-q", "--target", str(target), PACKAGE_ROOT],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"pip install failed ({r.returncode}):\n{r.stdout}{r.stderr}"


def run_installed(target, code):
    env = {k: v for k, v in os.environ.items() if k not in ("QWEN_GDN_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=target)


def dist_info(target, name):
    (path,) = glob.glob(os.path.join(target, "qwen_gdn-*.dist-info", name))
    with open(path) as f:
        return f.read()


def test_pure_wheel(tmp_path):
    pip_install(tmp_path, None)
    assert "Tag: py3-none-any\n" in dist_info(tmp_path, "WHEEL")
    files = sorted(os.listdir(tmp_path / "qwen_gdn"))
    assert "_lib.py" in files
    assert not [f for f in files if ".so" in f], files
    # One version: the package's __version__ is the wheel's, as importlib.metadata reads it.
    r = run_installed(tmp_path, "import importlib.metadata as m, qwen_gdn; "
                                "print(qwen_gdn.__version__, m.version('qwen-gdn'))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [qwen_gdn.__version__] * 2
    metadata = dist_info(tmp_path, "METADATA")
    assert "Provides-Extra: torch\n" in metadata
    assert 'Requires-Dist: torch>=2.4; extra == "torch"\n' in metadata


def test_bundled_library_is_found(tmp_path, library):
    pip_install(tmp_path, library)
    assert "Tag: py3-none-any\n" not in dist_info(tmp_path, "WHEEL")
    r = run_installed(tmp_path, "import qwen_gdn; print(qwen_gdn.library_path()); "
                                "print(qwen_gdn.abi_version())")
    assert r.returncode == 0, r.stderr
    path, abi = r.stdout.split()
    assert path == os.path.join(tmp_path, "qwen_gdn", "libqwen_gdn.so.1")
    assert abi == "1000"
