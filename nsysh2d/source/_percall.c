/* _percall: the per-call pass of issue 59 in C (source/percall.py drives it; the loops are in _percall_core.h).
 *
 * Why compiled: on a large export, joining each copy call with its GPU activity row and finding its innermost
 * NVTX range were DuckDB steps over millions of rows (store_calls' api_raw, copies_join, the ASOF join of
 * with_nvtx). Here each part of the calls, as the reader hands it over, is joined through an index of the activity
 * rows by correlation id, and the NVTX range is a binary search per call; DuckDB gets one per-copy table. The GIL
 * is released in every loop.
 *
 * Safety: every buffer length is checked against the row counts before the loop; an index from outside is probed
 * at most once per slot and its rows are bounds-checked; events out of order are refused. Fuzzed with libFuzzer
 * (fuzz/percall_fuzz.c, on values read from files cut from bundled exports; docs/benchmarks.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_percall_core.h"

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

static PyObject *match_calls(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b[7];   /* index, pid, pid_ok (the activity's); corr, corr_ok, tid, tid_ok (the calls') */
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6]))
        return NULL;
    PyObject *out = NULL;
    size_t cap = (size_t)b[0].len / sizeof(h2d_slot), n_rows = (size_t)b[1].len / 8, n = (size_t)b[3].len / 8;
    if (cap == 0 || (cap & (cap - 1)) || (size_t)b[0].len != cap * sizeof(h2d_slot)) {
        PyErr_SetString(PyExc_ValueError, "index: not one of build_index's");
    } else if (sized(&b[1], n_rows, 8, "pid") && sized(&b[2], n_rows, 1, "pid valid") && sized(&b[3], n, 8, "corr") &&
               sized(&b[4], n, 1, "corr valid") && sized(&b[5], n, 8, "tid") && sized(&b[6], n, 1, "tid valid")) {
        out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
        if (out) {
            int64_t *match = (int64_t *)PyBytes_AS_STRING(out);
            Py_BEGIN_ALLOW_THREADS
            h2d_match(b[0].buf, cap, b[1].buf, b[2].buf, n_rows, b[3].buf, b[4].buf, b[5].buf, b[6].buf, n, match);
            Py_END_ALLOW_THREADS
        }
    }
    for (int i = 0; i < 7; i++)
        PyBuffer_Release(&b[i]);
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
     "build_index(keys int64, valid uint8) -> (index, repeated keys): the rows by key (match_calls' index)."},
    {"match_calls", match_calls, METH_VARARGS,
     "match_calls(index, pid int64, pid_valid uint8, corr int64, corr_valid uint8, tid int64, tid_valid uint8)\n"
     "-> match int64: each call's activity row (-1: none), by correlation id and process."},
    {"nvtx_attrib", nvtx_attrib, METH_VARARGS,
     "nvtx_attrib(tid, tid_ok, start, start_ok, end, end_ok, ev_tid, ev_t, ev_id, ev_id_ok, ev_end, ev_end_ok,\n"
     "ev_g, ev_g_ok) -> (range id int64, its validity uint8, range name number int64): each call's innermost range."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_percall",
                                    "The per-call pass: copy calls joined with their activity and NVTX (percall.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__percall(void) {
    return PyModule_Create(&module);
}
