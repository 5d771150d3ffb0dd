/* The per-call pass behind _percall.c, with no Python in it (the extension and fuzz/percall_fuzz.c include it,
 * so what is fuzzed is what runs on user files' values):
 *   h2d_index_build  an open-addressing index of the memcpy activity rows by correlation id;
 *   h2d_match        each copy call's activity row through that index (the same correlation id, and the same
 *                    process or none named);
 *   h2d_nvtx_attrib  each call's innermost enclosing NVTX range, from the events of model/nvtx.sql.
 * Arrays come with a byte per row saying which values are valid (1) or NULL (0). */
#ifndef H2D_PERCALL_CORE_H
#define H2D_PERCALL_CORE_H

#include "_sqlite_ints_core.h"

/* global_pid_of (queries/source/global_tid.sql): DuckDB's // on BIGINT truncates, as C's / does. */
#define H2D_PID_OF(tid) (((tid) / 16777216) * 16777216)

typedef struct {
    int64_t key, row; /* row -1: empty slot */
} h2d_slot;

static uint64_t h2d_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb53fe1a85ec9ULL;
    x ^= x >> 33;
    return x;
}

/* Slots for n keys: a power of two at least 2n (at least 16); 0 when that does not fit size_t. */
static size_t h2d_index_slots(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) {
        if (cap > SIZE_MAX / 2 / sizeof(h2d_slot))
            return 0;
        cap *= 2;
    }
    return cap;
}

/* Fills slots (cap of them, a power of two > n, from h2d_index_slots) with the rows whose key is valid. Returns
 * the number of keys seen more than once (the first row of a key stays in the index). */
static size_t h2d_index_build(const int64_t *key, const uint8_t *ok, size_t n, h2d_slot *slots, size_t cap) {
    size_t dups = 0;
    for (size_t i = 0; i < cap; i++)
        slots[i].row = -1;
    for (size_t i = 0; i < n; i++) {
        if (ok && !ok[i])
            continue;
        size_t s = h2d_mix((uint64_t)key[i]) & (cap - 1);
        while (slots[s].row >= 0 && slots[s].key != key[i])
            s = (s + 1) & (cap - 1);
        if (slots[s].row >= 0) {
            dups++;
            continue;
        }
        slots[s].key = key[i];
        slots[s].row = (int64_t)i;
    }
    return dups;
}

/* The row of key, or -1. A slot table from outside (the fuzzer's) may be full or name rows past n_rows: the
 * probe stops after cap slots, and such a row reads as none. */
static int64_t h2d_index_find(const h2d_slot *slots, size_t cap, int64_t key, size_t n_rows) {
    size_t s = h2d_mix((uint64_t)key) & (cap - 1);
    for (size_t probes = 0; probes < cap; probes++, s = (s + 1) & (cap - 1)) {
        if (slots[s].row < 0)
            return -1;
        if (slots[s].key == key)
            return (uint64_t)slots[s].row < n_rows ? slots[s].row : -1;
    }
    return -1;
}

/* match[i] (n of them) := the activity row of call i: the row the index gives for its correlation id (corr), if
 * that row names no process (pid_ok 0) or the call's (global_pid_of its global_tid); -1 otherwise, as
 * copies_join.sql's join. */
static void h2d_match(const h2d_slot *slots, size_t cap, const int64_t *pid, const uint8_t *pid_ok, size_t n_rows,
                      const int64_t *corr, const uint8_t *corr_ok, const int64_t *tid, const uint8_t *tid_ok, size_t n,
                      int64_t *match) {
    for (size_t i = 0; i < n; i++) {
        int64_t row = corr_ok[i] ? h2d_index_find(slots, cap, corr[i], n_rows) : -1;
        if (row >= 0 && pid_ok[row] && !(tid_ok[i] && pid[row] == H2D_PID_OF(tid[i])))
            row = -1;
        match[i] = row;
    }
}

/* Each call's innermost enclosing NVTX range (with_nvtx in model/nvtx.sql): the event of its thread at the latest
 * time t <= its start; that event's range if the range ends at or after the call (range_id and range_g from it,
 * else NULL and 0). Events sorted by (thread, t), unique, none NULL in those two; H2D_ERROR otherwise. */
typedef struct {
    const int64_t *tid, *t, *id, *end, *g;
    const uint8_t *id_ok, *end_ok, *g_ok;
    size_t n;
} h2d_events;

static int h2d_nvtx_attrib(const int64_t *tid, const uint8_t *tid_ok, const int64_t *start, const uint8_t *start_ok,
                           const int64_t *end, const uint8_t *end_ok, size_t n, const h2d_events *ev,
                           int64_t *range_id, uint8_t *range_ok, int64_t *range_g) {
    for (size_t j = 1; j < ev->n; j++)
        if (ev->tid[j] < ev->tid[j - 1] || (ev->tid[j] == ev->tid[j - 1] && ev->t[j] <= ev->t[j - 1]))
            return H2D_ERROR;
    for (size_t i = 0; i < n; i++) {
        range_id[i] = 0;
        range_ok[i] = 0;
        range_g[i] = 0;
        if (!tid_ok[i] || !start_ok[i])
            continue;
        /* the last event at or before (tid, start): lo ends as the count of events <= it */
        size_t lo = 0, hi = ev->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ev->tid[mid] < tid[i] || (ev->tid[mid] == tid[i] && ev->t[mid] <= start[i]))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0 || ev->tid[lo - 1] != tid[i])
            continue;
        size_t e = lo - 1;
        if (!end_ok[i] || !ev->end_ok[e] || ev->end[e] < end[i])
            continue;
        if (ev->id_ok[e]) {
            range_id[i] = ev->id[e];
            range_ok[i] = 1;
        }
        if (ev->g_ok[e])
            range_g[i] = ev->g[e];
    }
    return H2D_OK;
}

#endif
