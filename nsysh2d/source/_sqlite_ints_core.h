/* The loop behind _sqlite_ints.c, with no Python in it: the extension and the libFuzzer harness
 * (fuzz/sqlite_ints_fuzz.c) both include it, so what is fuzzed is what reads user files. */
#ifndef H2D_SQLITE_INTS_CORE_H
#define H2D_SQLITE_INTS_CORE_H

#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H2D_MAX_COLUMNS 64
enum { H2D_OK = 0, H2D_NOT_INTEGER = 1, H2D_ERROR = 2 };

typedef struct {
    void *data;      /* rows values of 8 (q) or 4 (i) bytes */
    uint8_t *valid;  /* Arrow validity bitmap, allocated at the first NULL (then bits of non-NULL rows are 1) */
    size_t nulls;
} h2d_column;

typedef struct {
    size_t rows, cap;
    int ncols;
    h2d_column cols[H2D_MAX_COLUMNS];
    char message[300];
} h2d_result;

static void h2d_free(h2d_result *r) {
    for (int c = 0; c < r->ncols; c++) {
        free(r->cols[c].data);
        free(r->cols[c].valid);
        r->cols[c].data = NULL;
        r->cols[c].valid = NULL;
    }
    r->ncols = 0;
}

/* Room for at least one more row in every column (doubling; 0 on failure). */
static int h2d_grow(h2d_result *r, const char *kinds) {
    if (r->rows < r->cap)
        return 1;
    size_t cap = r->cap ? r->cap * 2 : 4096;
    if (cap < r->cap || cap > SIZE_MAX / 16)
        return 0;
    for (int c = 0; c < r->ncols; c++) {
        size_t width = kinds[c] == 'q' ? 8 : 4;
        void *d = realloc(r->cols[c].data, cap * width);
        if (!d)
            return 0;
        r->cols[c].data = d;
        if (r->cols[c].valid) {
            uint8_t *v = realloc(r->cols[c].valid, (cap + 7) / 8);
            if (!v)
                return 0;
            memset(v + (r->cap + 7) / 8, 0xff, (cap + 7) / 8 - (r->cap + 7) / 8);
            r->cols[c].valid = v;
        }
    }
    r->cap = cap;
    return 1;
}

/* SQLite's messages may quote the file (a damaged schema's text): one line, no control characters. */
static int h2d_fail(h2d_result *r, int code, const char *what, const char *detail) {
    snprintf(r->message, sizeof r->message, "%s%s%.200s", what, detail ? ": " : "", detail ? detail : "");
    for (char *p = r->message; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return code;
}

/* One cell into row r->rows of column c; H2D_OK or H2D_NOT_INTEGER. */
static int h2d_cell(h2d_result *r, sqlite3_stmt *st, int c, char kind) {
    sqlite3_int64 v = 0;
    size_t row = r->rows;
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER:
        v = sqlite3_column_int64(st, c);
        break;
    case SQLITE_FLOAT: {
        /* A REAL that is a whole number in range reads as that integer (as a safe Arrow cast of it would). */
        double d = sqlite3_column_double(st, c);
        if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
            return H2D_NOT_INTEGER;
        v = (sqlite3_int64)d;
        break;
    }
    case SQLITE_NULL: {
        h2d_column *col = &r->cols[c];
        if (!col->valid) {
            col->valid = malloc((r->cap + 7) / 8);
            if (!col->valid)
                return H2D_ERROR;
            memset(col->valid, 0xff, (r->cap + 7) / 8);
        }
        col->valid[row / 8] &= (uint8_t)~(1u << (row % 8));
        col->nulls++;
        break;
    }
    default: /* TEXT, BLOB */
        return H2D_NOT_INTEGER;
    }
    if (kind == 'q') {
        ((int64_t *)r->cols[c].data)[row] = (int64_t)v;
    } else {
        if (v < INT32_MIN || v > INT32_MAX)
            return H2D_NOT_INTEGER;
        ((int32_t *)r->cols[c].data)[row] = (int32_t)v;
    }
    return H2D_OK;
}

/* Runs sql on the file read-only; kinds: ncols letters q/i (the caller checked them). On success the
 * columns are in r (free with h2d_free); otherwise r->message says why (and r holds nothing). */
static int h2d_read_ints(const char *path, const char *sql, const char *kinds, int ncols, h2d_result *r) {
    memset(r, 0, sizeof *r);
    if (ncols < 1 || ncols > H2D_MAX_COLUMNS)
        return h2d_fail(r, H2D_ERROR, "bad column count", NULL);
    r->ncols = ncols;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int code = H2D_OK;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        code = h2d_fail(r, H2D_ERROR, "cannot open", db ? sqlite3_errmsg(db) : "out of memory");
        goto done;
    }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        code = h2d_fail(r, H2D_ERROR, "cannot read", sqlite3_errmsg(db));
        goto done;
    }
    if (sqlite3_column_count(st) != ncols) {
        code = h2d_fail(r, H2D_ERROR, "the query's columns are not the kinds given", NULL);
        goto done;
    }
    for (;;) {
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            break;
        if (s != SQLITE_ROW) {
            code = h2d_fail(r, H2D_ERROR, "cannot read", sqlite3_errmsg(db));
            goto done;
        }
        if (!h2d_grow(r, kinds)) {
            code = h2d_fail(r, H2D_ERROR, "out of memory", NULL);
            goto done;
        }
        for (int c = 0; c < ncols; c++) {
            int got = h2d_cell(r, st, c, kinds[c]);
            if (got == H2D_NOT_INTEGER) {
                char which[32];
                snprintf(which, sizeof which, "column %d", c);
                code = h2d_fail(r, H2D_NOT_INTEGER, "a value that is not an integer of its kind", which);
                goto done;
            }
            if (got != H2D_OK) {
                code = h2d_fail(r, H2D_ERROR, "out of memory", NULL);
                goto done;
            }
        }
        r->rows++;
    }
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (code != H2D_OK) {
        h2d_free(r);
        r->rows = 0;
    }
    return code;
}

#endif
