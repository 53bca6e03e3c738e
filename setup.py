"""Build the compiled hot paths. There is no pure-Python fallback: a build that cannot
compile the extensions fails, loudly."""

import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

here = Path(__file__).parent
# What GCC 14 refuses, refused by every GCC and Clang: an older compiler only warns, and the code
# would build here and fail on a newer machine.
strict = (
    []
    if sys.platform == "win32"
    else [
        "-Werror=incompatible-pointer-types",
        "-Werror=implicit-function-declaration",
        "-Werror=int-conversion",
    ]
)
engine = here / "oasr_tok" / "_engine"
extensions = [
    Extension(
        f"oasr_tok._engine.{pyx.stem}",
        [str(pyx.relative_to(here))],
        include_dirs=[str(engine.relative_to(here))],
        extra_compile_args=strict,
    )
    for pyx in sorted(engine.glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, language_level=3))
