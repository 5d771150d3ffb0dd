"""The compiled part of nsysh2d (everything else is in pyproject.toml).

nsysh2d.source._sqlite_ints reads the integer columns of the big tables' filtered rows through SQLite's C API
(source/ingest.py); nsysh2d.source._percall joins the copy calls with their activity and NVTX ranges as they are
read (source/percall.py). Building them needs a C compiler, the Python headers and SQLite's (Debian: gcc,
python3-dev, libsqlite3-dev). Where they are missing the install still succeeds without them, and ingest.py reads
through ADBC's SQLite driver instead, the model through its SQL steps alone (slower; `nsysh2d --version` says which
reader is in use).
"""
from setuptools import Extension, setup

FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra"]
setup(ext_modules=[
    Extension("nsysh2d.source._sqlite_ints", ["nsysh2d/source/_sqlite_ints.c"],
              depends=["nsysh2d/source/_sqlite_ints_core.h"], libraries=["sqlite3"], extra_compile_args=FLAGS,
              optional=True),
    Extension("nsysh2d.source._percall", ["nsysh2d/source/_percall.c"],
              depends=["nsysh2d/source/_percall_core.h", "nsysh2d/source/_sqlite_ints_core.h"], libraries=["sqlite3"],
              extra_compile_args=FLAGS, optional=True)])
