"""Build the compiled hot paths. There is no pure-Python fallback: a build that cannot
compile the extensions fails, loudly."""

from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

here = Path(__file__).parent
extensions = [
    Extension(f"oasr_tok.{pyx.stem}", [str(pyx.relative_to(here))], include_dirs=["oasr_tok"])
    for pyx in sorted((here / "oasr_tok").glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, language_level=3))
