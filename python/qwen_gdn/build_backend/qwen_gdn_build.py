"""A PEP 517 build backend for qwen_gdn that needs only the standard library, so that
`pip install ./python/qwen_gdn` works offline on a fresh machine (no setuptools, no wheel).

The wheel holds the qwen_gdn/ package (without tests). When QWEN_GDN_LIBRARY names a built
libqwen_gdn.so at build time, that file goes in as qwen_gdn/libqwen_gdn.so.<ABI major> and the
wheel is tagged for this platform; otherwise it is a pure py3-none-any wheel that looks for the
library at run time (qwen_gdn/_lib.py).
"""

import base64
import hashlib
import io
import os
import re
import sysconfig
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "qwen_gdn"


def _project():
    """pyproject.toml's [project] table, with the version from the package (its one place)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode()
    try:
        import tomllib
        project = tomllib.loads(text)["project"]
    except ImportError:  # Python < 3.11: `key = "string"` lines and the extras' one-line lists
        table = text.split("\n[project]", 1)[1].split("\n[", 1)[0]
        project = dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', table, re.M))
        extras = text.split("\n[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
        project["optional-dependencies"] = {
            name: re.findall(r'"([^"]*)"', items)
            for name, items in re.findall(r"^([\w-]+)\s*=\s*\[(.*)\]", extras, re.M)}
    project["version"] = _version()
    return project


def _version():
    with open(os.path.join(ROOT, PACKAGE, "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M).group(1)


def _dist(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    for extra, requirements in sorted(project.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    return "\n".join(lines) + "\n"


def _abi_major():
    with open(os.path.join(ROOT, PACKAGE, "_lib.py")) as f:
        return re.search(r"^ABI_MAJOR = (\d+)$", f.read(), re.M).group(1)


def _files():
    """(path in the wheel, bytes) of the package, in a fixed order."""
    out = []
    top = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(top)):
        if name.endswith(".py"):
            with open(os.path.join(top, name), "rb") as f:
                out.append((f"{PACKAGE}/{name}", f.read()))
    library = os.environ.get("QWEN_GDN_LIBRARY")
    if library:
        with open(library, "rb") as f:
            out.append((f"{PACKAGE}/libqwen_gdn.so.{_abi_major()}", f.read()))
    return out, bool(library)


def _tag(platform_specific):
    if not platform_specific:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(directory, files, platform_specific, project):
    dist, version = _dist(project), project["version"]
    tag = _tag(platform_specific)
    info = f"{dist}-{version}.dist-info"
    entries = list(files) + [
        (f"{info}/METADATA", _metadata(project).encode()),
        (f"{info}/WHEEL", ("Wheel-Version: 1.0\nGenerator: qwen_gdn_build\n"
                           f"Root-Is-Purelib: {'false' if platform_specific else 'true'}\n"
                           f"Tag: {tag}\n").encode()),
    ]
    record = "\n".join(_record_line(p, d) for p, d in entries) + f"\n{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    name = f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            zi = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if "/libqwen_gdn.so." in path else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    info = f"{_dist(project)}-{project['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata(project))
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files, platform_specific = _files()
    return _write_wheel(wheel_directory, files, platform_specific, _project())


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = f"{_dist(project)}-{project['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "build_backend/qwen_gdn_build.py"] + [
                f"{PACKAGE}/{n}" for n in sorted(os.listdir(os.path.join(ROOT, PACKAGE)))
                if n.endswith(".py")]:
            with open(os.path.join(ROOT, rel), "rb") as f:
                data = f.read()
            ti = tarfile.TarInfo(f"{base}/{rel}")
            ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
            tar.addfile(ti, io.BytesIO(data))
        meta = _metadata(project).encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size, ti.mtime, ti.mode = len(meta), 0, 0o644
        tar.addfile(ti, io.BytesIO(meta))
    return name
