"""The compiled part of nsysh2d (everything else is in pyproject.toml).

nsysh2d.source._sqlite_ints reads the integer columns of the big tables' filtered rows through SQLite's C API
(source/ingest.py). Building it needs a C compiler, the Python headers and SQLite's (Debian: gcc, python3-dev,
libsqlite3-dev). Where they are missing the install still succeeds without it, and ingest.py reads through
ADBC's SQLite driver instead (slower; `nsysh2d --version` says which reader is in use).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "nsysh2d.source._sqlite_ints", ["nsysh2d/source/_sqlite_ints.c"], depends=["nsysh2d/source/_sqlite_ints_core.h"],
    libraries=["sqlite3"], extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"], optional=True)])
