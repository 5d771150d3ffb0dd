/* _sqlite_ints: run one read-only SQLite query whose columns are all integers and hand back each column as
 * a contiguous little-endian buffer (int64 or int32) plus an Arrow validity bitmap where it has NULLs.
 *
 * Why compiled: the big tables of an nsys export are read filtered inside SQLite (ingest.py); the rows that
 * pass were converted by ADBC's driver into Arrow batches, then cast. Here the loop is ours: one
 * sqlite3_column_int64 per cell straight into the output column, with the GIL released for the whole query,
 * so parts read on several threads at once, and nothing to import but this module.
 *
 * Safety: the file is opened read-only (SQLITE_OPEN_READONLY, so SQLite writes nothing to or beside it);
 * every value is checked (REAL only if integral and in range, TEXT and BLOB refused: error kind
 * "not_integer"); int32 columns are range-checked; buffers grow by doubling with overflow checks and are
 * freed on every path. Fuzzed with libFuzzer (fuzz/sqlite_ints_fuzz.c, docs/benchmarks.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sqlite3.h>
#include "_sqlite_ints_core.h"

static PyObject *NotIntegerError;
static PyObject *ReadError;

static PyObject *read_columns(PyObject *self, PyObject *args) {
    (void)self;
    const char *path, *sql, *kinds;
    Py_ssize_t nkinds;
    if (!PyArg_ParseTuple(args, "sss#", &path, &sql, &kinds, &nkinds))
        return NULL;
    if (nkinds < 1 || nkinds > H2D_MAX_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "kinds: 1 to 64 letters, q (int64) or i (int32)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nkinds; i++) {
        if (kinds[i] != 'q' && kinds[i] != 'i') {
            PyErr_SetString(PyExc_ValueError, "kinds: only q (int64) and i (int32)");
            return NULL;
        }
    }
    h2d_result res;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = h2d_read_ints(path, sql, kinds, (int)nkinds, &res);
    Py_END_ALLOW_THREADS
    if (rc != H2D_OK) {
        PyObject *kind = rc == H2D_NOT_INTEGER ? NotIntegerError : ReadError;
        PyErr_SetString(kind, res.message[0] ? res.message : "unknown error");
        h2d_free(&res);
        return NULL;
    }
    PyObject *cols = PyList_New(nkinds);
    if (!cols) {
        h2d_free(&res);
        return NULL;
    }
    for (int c = 0; c < (int)nkinds; c++) {
        size_t width = kinds[c] == 'q' ? 8 : 4;
        PyObject *data = PyBytes_FromStringAndSize((const char *)res.cols[c].data, (Py_ssize_t)(res.rows * width));
        PyObject *valid;
        if (res.cols[c].nulls) {
            valid = PyBytes_FromStringAndSize((const char *)res.cols[c].valid, (Py_ssize_t)((res.rows + 7) / 8));
        } else {
            valid = Py_None;
            Py_INCREF(valid);
        }
        /* "O" takes new references: ours are dropped on every path, whether the tuple was built or not. */
        PyObject *pair = (data && valid) ? Py_BuildValue("(OOn)", data, valid, (Py_ssize_t)res.cols[c].nulls) : NULL;
        Py_XDECREF(data);
        Py_XDECREF(valid);
        if (!pair) {
            Py_DECREF(cols);
            h2d_free(&res);
            return NULL;
        }
        PyList_SET_ITEM(cols, c, pair);
    }
    PyObject *out = Py_BuildValue("(nN)", (Py_ssize_t)res.rows, cols);
    h2d_free(&res);
    return out;
}

static PyMethodDef methods[] = {
    {"read_columns", read_columns, METH_VARARGS,
     "read_columns(path, sql, kinds) -> (rows, [(data, validity or None, null count), ...]).\n"
     "Runs sql on the SQLite file at path (a file: URI or a path; opened read-only). kinds: one letter per result\n"
     "column, q (int64) or i (int32). data: the column's values, little-endian; validity: an Arrow bitmap (LSB first)\n"
     "when the column has NULLs. Raises NotIntegerError for a value that is not an integer of its kind, ReadError\n"
     "for anything SQLite refuses (not a database, damaged, no such table)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sqlite_ints",
                                    "Integer columns of a read-only SQLite query, read in C (ingest.py).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sqlite_ints(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    NotIntegerError = PyErr_NewException("nsysh2d.source._sqlite_ints.NotIntegerError", PyExc_ValueError, NULL);
    ReadError = PyErr_NewException("nsysh2d.source._sqlite_ints.ReadError", PyExc_OSError, NULL);
    if (!NotIntegerError || !ReadError || PyModule_AddObjectRef(m, "NotIntegerError", NotIntegerError) < 0 ||
        PyModule_AddObjectRef(m, "ReadError", ReadError) < 0 ||
        PyModule_AddStringConstant(m, "sqlite_version", sqlite3_libversion()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
