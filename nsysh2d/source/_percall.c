/* _percall: the per-call pass of issue 59 in C (source/percall.py drives it; the loops are in _percall_core.h).
 *
 * Why compiled: on a large export, reading the copy calls, joining each with its GPU activity row and finding
 * its innermost NVTX range were three DuckDB steps over millions of rows (store_calls, copies_join, the ASOF
 * join of with_nvtx). Here the join happens right after the filtered read, on the reading thread, through an
 * index of the activity rows by correlation id, and the NVTX range is a binary search per call; DuckDB gets one
 * per-copy table. The GIL is released in every function.
 *
 * Safety: every buffer length is checked against the row counts before the loop; the SQLite side is
 * _sqlite_ints_core.h's (read-only, every value checked); an index from outside is probed at most once per slot
 * and its rows are bounds-checked. Fuzzed with libFuzzer (fuzz/percall_fuzz.c, docs/benchmarks.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_percall_core.h"

static PyObject *NotIntegerError;
static PyObject *ReadError;

static void free_capsule(PyObject *cap) {
    free(PyCapsule_GetPointer(cap, NULL));
}

/* A malloc'd buffer of n bytes handed to Python without a copy: (address, n, owner), pyarrow.foreign_buffer's
 * arguments; the owner frees it. Takes ptr (freed here on failure). n 0: an empty bytes object as the owner. */
static PyObject *handed(void *ptr, size_t n) {
    if (!n) {
        free(ptr);
        return Py_BuildValue("(nny#)", (Py_ssize_t)0, (Py_ssize_t)0, "", (Py_ssize_t)0);
    }
    void *fit = realloc(ptr, n);   /* the columns grew by doubling: give back what the rows do not use */
    if (fit)
        ptr = fit;
    PyObject *cap = PyCapsule_New(ptr, NULL, free_capsule);
    if (!cap) {
        free(ptr);
        return NULL;
    }
    return Py_BuildValue("(NnN)", PyLong_FromVoidPtr(ptr), (Py_ssize_t)n, cap);
}

/* (rows, [(data, validity or None, nulls), ...]) of a read, data and validity as handed() gives them; the buffers
 * move out of res (nothing left to free there). */
static PyObject *columns_of(h2d_result *res, const char *kinds) {
    PyObject *cols = PyList_New(res->ncols);
    if (!cols)
        return NULL;
    for (int c = 0; c < res->ncols; c++) {
        size_t width = kinds[c] == 'q' ? 8 : 4;
        PyObject *data = handed(res->cols[c].data, res->rows * width);
        res->cols[c].data = NULL;
        PyObject *valid = Py_None;
        if (res->cols[c].nulls) {
            valid = handed(res->cols[c].valid, (res->rows + 7) / 8);
            res->cols[c].valid = NULL;
        } else {
            Py_INCREF(valid);
        }
        PyObject *pair = (data && valid) ? Py_BuildValue("(OOn)", data, valid, (Py_ssize_t)res->cols[c].nulls) : NULL;
        Py_XDECREF(data);
        Py_XDECREF(valid);
        if (!pair) {
            Py_DECREF(cols);
            return NULL;
        }
        PyList_SET_ITEM(cols, c, pair);
    }
    return cols;
}

static int sized(Py_buffer *b, size_t n, size_t width, const char *what) {
    if ((size_t)b->len != n * width) {
        PyErr_Format(PyExc_ValueError, "%s: %zu bytes expected, %zd given", what, n * width, b->len);
        return 0;
    }
    return 1;
}

static PyObject *build_index(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer key, ok;
    if (!PyArg_ParseTuple(args, "y*y*", &key, &ok))
        return NULL;
    PyObject *out = NULL;
    size_t n = (size_t)key.len / 8, cap = h2d_index_slots(n);
    if (sized(&key, n, 8, "keys") && sized(&ok, n, 1, "valid")) {
        if (!cap) {
            PyErr_NoMemory();
        } else {
            PyObject *slots = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap * sizeof(h2d_slot)));
            if (slots) {
                size_t dups;
                h2d_slot *s = (h2d_slot *)PyBytes_AS_STRING(slots);
                Py_BEGIN_ALLOW_THREADS
                dups = h2d_index_build(key.buf, ok.buf, n, s, cap);
                Py_END_ALLOW_THREADS
                out = Py_BuildValue("(Nn)", slots, (Py_ssize_t)dups);
            }
        }
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&ok);
    return out;
}

static PyObject *join_calls(PyObject *self, PyObject *args) {
    (void)self;
    const char *path, *sql;
    Py_buffer slots, pid, pid_ok;
    if (!PyArg_ParseTuple(args, "ssy*y*y*", &path, &sql, &slots, &pid, &pid_ok))
        return NULL;
    PyObject *out = NULL;
    size_t n_rows = (size_t)pid.len / 8, cap = (size_t)slots.len / sizeof(h2d_slot);
    if (!sized(&pid, n_rows, 8, "pid") || !sized(&pid_ok, n_rows, 1, "pid valid"))
        goto done;
    if (cap == 0 || (cap & (cap - 1)) || (size_t)slots.len != cap * sizeof(h2d_slot)) {
        PyErr_SetString(PyExc_ValueError, "index: not one of build_index's");
        goto done;
    }
    h2d_result res;
    int64_t *match = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = h2d_join_calls(path, sql, slots.buf, cap, pid.buf, pid_ok.buf, n_rows, &res, &match);
    Py_END_ALLOW_THREADS
    if (rc != H2D_OK) {
        PyErr_SetString(rc == H2D_NOT_INTEGER ? NotIntegerError : ReadError,
                        res.message[0] ? res.message : "unknown error");
        h2d_free(&res);
        goto done;
    }
    PyObject *cols = columns_of(&res, H2D_CALL_KINDS);
    PyObject *m = handed(match, res.rows * 8);
    if (cols && m)
        out = Py_BuildValue("(nNN)", (Py_ssize_t)res.rows, cols, m);
    else {
        Py_XDECREF(cols);
        Py_XDECREF(m);
    }
    h2d_free(&res);
done:
    PyBuffer_Release(&slots);
    PyBuffer_Release(&pid);
    PyBuffer_Release(&pid_ok);
    return out;
}

static PyObject *read_columns(PyObject *self, PyObject *args) {
    (void)self;
    const char *path, *sql, *kinds;
    Py_ssize_t nkinds;
    if (!PyArg_ParseTuple(args, "sss#", &path, &sql, &kinds, &nkinds))
        return NULL;
    if (nkinds < 1 || nkinds > H2D_MAX_COLUMNS || (Py_ssize_t)strspn(kinds, "qi") != nkinds) {
        PyErr_SetString(PyExc_ValueError, "kinds: 1 to 64 letters, q (int64) or i (int32)");
        return NULL;
    }
    h2d_result res;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = h2d_read_ints(path, sql, kinds, (int)nkinds, &res);
    Py_END_ALLOW_THREADS
    if (rc != H2D_OK) {
        PyErr_SetString(rc == H2D_NOT_INTEGER ? NotIntegerError : ReadError,
                        res.message[0] ? res.message : "unknown error");
        h2d_free(&res);
        return NULL;
    }
    PyObject *cols = columns_of(&res, kinds);
    PyObject *out = cols ? Py_BuildValue("(nN)", (Py_ssize_t)res.rows, cols) : NULL;
    h2d_free(&res);
    return out;
}

static PyObject *nvtx_attrib(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b[14];   /* tid, tid_ok, start, start_ok, end, end_ok; events: tid, t, id, id_ok, end, end_ok, g, g_ok */
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &b[9], &b[10], &b[11], &b[12], &b[13]))
        return NULL;
    PyObject *out = NULL;
    size_t n = (size_t)b[0].len / 8, m = (size_t)b[6].len / 8;
    int ok = 1;
    static const size_t width[14] = {8, 1, 8, 1, 8, 1, 8, 8, 8, 1, 8, 1, 8, 1};
    for (int i = 0; i < 14 && ok; i++)
        ok = sized(&b[i], i < 6 ? n : m, width[i], "column");
    if (ok) {
        PyObject *id = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
        PyObject *id_ok = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
        PyObject *g = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
        if (id && id_ok && g) {
            h2d_events ev = {b[6].buf, b[7].buf, b[8].buf, b[10].buf, b[12].buf, b[9].buf, b[11].buf, b[13].buf, m};
            int rc;
            Py_BEGIN_ALLOW_THREADS
            rc = h2d_nvtx_attrib(b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf, b[5].buf, n, &ev,
                                 (int64_t *)PyBytes_AS_STRING(id), (uint8_t *)PyBytes_AS_STRING(id_ok),
                                 (int64_t *)PyBytes_AS_STRING(g));
            Py_END_ALLOW_THREADS
            if (rc == H2D_OK) {
                out = Py_BuildValue("(NNN)", id, id_ok, g);
                id = id_ok = g = NULL;
            } else {
                PyErr_SetString(PyExc_ValueError, "events: not sorted by (thread, time) without repeats");
            }
        }
        Py_XDECREF(id);
        Py_XDECREF(id_ok);
        Py_XDECREF(g);
    }
    for (int i = 0; i < 14; i++)
        PyBuffer_Release(&b[i]);
    return out;
}

static PyMethodDef methods[] = {
    {"build_index", build_index, METH_VARARGS,
     "build_index(keys int64, valid uint8) -> (index, repeated keys): the rows by key (join_calls' index)."},
    {"join_calls", join_calls, METH_VARARGS,
     "join_calls(path, sql, index, pid int64, pid_valid uint8) -> (rows, columns as read_columns, match int64 as\n"
     "(address, bytes, owner)): runs sql (the copy calls' 7 columns) and gives each call its activity row (-1: none)."},
    {"read_columns", read_columns, METH_VARARGS,
     "read_columns(path, sql, kinds) -> (rows, [(data, validity or None, nulls), ...]): _sqlite_ints.read_columns,\n"
     "each buffer as (address, bytes, owner) for pyarrow.foreign_buffer (no copy)."},
    {"nvtx_attrib", nvtx_attrib, METH_VARARGS,
     "nvtx_attrib(tid, tid_ok, start, start_ok, end, end_ok, ev_tid, ev_t, ev_id, ev_id_ok, ev_end, ev_end_ok,\n"
     "ev_g, ev_g_ok) -> (range id int64, its validity uint8, range name number int64): each call's innermost range."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_percall",
                                    "The per-call pass: copy calls joined with their activity and NVTX (percall.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__percall(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    NotIntegerError = PyErr_NewException("nsysh2d.source._percall.NotIntegerError", PyExc_ValueError, NULL);
    ReadError = PyErr_NewException("nsysh2d.source._percall.ReadError", PyExc_OSError, NULL);
    if (!NotIntegerError || !ReadError || PyModule_AddObjectRef(m, "NotIntegerError", NotIntegerError) < 0 ||
        PyModule_AddObjectRef(m, "ReadError", ReadError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
