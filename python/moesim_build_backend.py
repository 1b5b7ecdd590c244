"""PEP 517 build backend for `pip install .` (pyproject.toml).

It configures and builds the CMake target `moesim_python` (the extension module
`moesim`, python/module.cpp) and packs it as a wheel. Hand-written rather than
scikit-build-core or setuptools: those come from an index when pip builds in isolation,
and Debian 12 does not package scikit-build-core; this backend needs only the standard
library, so `pip install .` works offline.

The build folder is $MOESIM_BUILD_DIR, else the project's `build/` (the one `make`
uses, so that an existing build is reused), configured with this interpreter when it
has not been configured yet. The module must match the interpreter that installs it:
a build folder configured for another Python (another extension suffix) is an error
naming both, not a silent mismatch.
"""

import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _version():
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(moesim VERSION ([0-9.]+)", text)
    if not m:
        raise RuntimeError("CMakeLists.txt: no `project(moesim VERSION x.y.z)`")
    return m.group(1)


def _build_dir():
    return Path(os.environ.get("MOESIM_BUILD_DIR", ROOT / "build")).resolve()


def _run(cmd):
    print("moesim build:", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def _build_module():
    build = _build_dir()
    if not (build / "CMakeCache.txt").exists() or not (build / "Makefile").exists():
        _run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
              f"-DPython_EXECUTABLE={sys._base_executable}"])
    jobs = os.environ.get("MOESIM_BUILD_JOBS", str(os.cpu_count() or 1))
    _run(["cmake", "--build", build, "--target", "moesim_python", "-j", jobs])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = sorted((build / "python").glob("moesim*.so"))
    module = build / "python" / ("moesim" + suffix)
    if not module.exists():
        raise RuntimeError(
            f"{build}: the module built is {', '.join(p.name for p in found) or 'missing'}, not moesim{suffix} "
            f"for {sys.executable}; set MOESIM_BUILD_DIR to a new folder to build for this interpreter")
    return module


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}{sys.abiflags}-{plat}"


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: moesim\nVersion: {version}\n"
            "Summary: Performance model of Mixture-of-Experts LLM training: step time, TFLOPS/GPU, MFU, memory\n"
            "Requires-Python: >=3.9\n")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    info = Path(metadata_directory) / f"moesim-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata(version))
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    module = _build_module()
    tag = _tag()
    info = f"moesim-{version}.dist-info"
    files = {
        module.name: module.read_bytes(),
        f"{info}/METADATA": _metadata(version).encode(),
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: moesim_build_backend\nRoot-Is-Purelib: false\n"
                          f"Tag: {tag}\n").encode(),
    }
    record = "".join(_record_line(n, d) for n, d in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    wheel = Path(wheel_directory) / f"moesim-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return wheel.name
