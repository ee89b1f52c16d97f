"""`pip install` of the package, offline (--no-index: the in-tree build backend needs nothing from
an index), into a scratch folder: a pure wheel without QWEN_GDN_LIBRARY at build time, and one
with the library bundled when it is set; the bundled copy is then found with no variable set.
"""

import glob
import os
import subprocess
import sys
import tempfile
import unittest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pip_install(target, library):
    env = dict(os.environ)
    env.pop("QWEN_GDN_LIBRARY", None)
    if library:
        env["QWEN_GDN_LIBRARY"] = library
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-cache-dir",
                        "--disable-pip-version-check", "-q", "--target", target, PACKAGE_ROOT],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"pip install failed ({r.returncode}):\n{r.stdout}{r.stderr}")


def run_installed(target, code):
    env = {k: v for k, v in os.environ.items() if k not in ("QWEN_GDN_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = target
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=target)


def wheel_tag(target):
    (wheel,) = glob.glob(os.path.join(target, "qwen_gdn-*.dist-info", "WHEEL"))
    with open(wheel) as f:
        return [line.split(": ")[1].strip() for line in f if line.startswith("Tag: ")]


class PipInstall(unittest.TestCase):
    def test_pure_wheel(self):
        with tempfile.TemporaryDirectory() as target:
            pip_install(target, None)
            self.assertEqual(wheel_tag(target), ["py3-none-any"])
            files = sorted(os.listdir(os.path.join(target, "qwen_gdn")))
            self.assertIn("_lib.py", files)
            self.assertFalse([f for f in files if ".so" in f], files)
            r = run_installed(target, "import qwen_gdn; print(qwen_gdn.__version__)")
            self.assertEqual((r.returncode, r.stdout.strip()), (0, "0.1.0"), r.stderr)

    @unittest.skipUnless(os.environ.get("QWEN_GDN_LIBRARY"), "QWEN_GDN_LIBRARY is not set")
    def test_bundled_library_is_found(self):
        with tempfile.TemporaryDirectory() as target:
            pip_install(target, os.environ["QWEN_GDN_LIBRARY"])
            self.assertNotEqual(wheel_tag(target), ["py3-none-any"])
            r = run_installed(target, "import qwen_gdn; print(qwen_gdn.library_path()); "
                                      "print(qwen_gdn.abi_version())")
            self.assertEqual(r.returncode, 0, r.stderr)
            path, abi = r.stdout.split()
            self.assertEqual(path, os.path.join(target, "qwen_gdn", "libqwen_gdn.so.1"))
            self.assertEqual(abi, "1000")


if __name__ == "__main__":
    unittest.main()
