/* libFuzzer harness of the compiled per-call pass (nsysh2d/source/_percall_core.h): each input is a whole SQLite
 * file, written to a private file, read with the statements the analysis runs (fuzz/run_percall.sh writes them to
 * the file named by H2D_FUZZ_SQL: the activity first, then the copy calls' parts, one per line,
 * "<kinds><TAB><statement>") and put through the pass as source/percall.py runs it: the activity indexed, each
 * part of the calls joined through the index, and each call given its NVTX range from events made of the calls
 * themselves (sorted by thread and time, as model/percall_events.sql gives them). What must hold: no crash, no
 * sanitizer report, no hang, every match a row of the activity or -1 (and one whose key is the call's), and every
 * error a one-line message with nothing held. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../nsysh2d/source/_percall_core.h"

/* The copy calls' columns as COPY_CALLS (source/trace.py) reads them, and the activity's (percall_memcpy.sql). */
#define H2D_CALL_KINDS "qqiqqiq"
enum { H2D_C_START, H2D_C_END, H2D_C_CLASS, H2D_C_TID, H2D_C_CORR, H2D_C_NAME, H2D_C_CHAIN, H2D_C_N };

static int h2d_valid(const h2d_column *c, size_t row) {
    return !c->valid || (c->valid[row / 8] >> (row % 8)) & 1;
}

#define MAX_STATEMENTS 16
static char *kinds_of[MAX_STATEMENTS], *sql_of[MAX_STATEMENTS];
static int n_statements;
static char db_path[64], db_uri[96];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *list = getenv("H2D_FUZZ_SQL");
    FILE *f = list ? fopen(list, "r") : NULL;
    if (!f) {
        fprintf(stderr, "H2D_FUZZ_SQL must name the statements file (fuzz/run_percall.sh writes it)\n");
        abort();
    }
    static char line[1 << 16];
    while (n_statements < MAX_STATEMENTS && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = 0;
        tab[1 + strcspn(tab + 1, "\n")] = 0;
        kinds_of[n_statements] = strdup(line);
        sql_of[n_statements] = strdup(tab + 1);
        n_statements++;
    }
    fclose(f);
    if (n_statements < 2 || strcmp(kinds_of[0], "qqiiqqqiii") || strcmp(kinds_of[1], H2D_CALL_KINDS))
        abort();   /* the activity's columns (percall.MEMCPY), then the calls' */
    snprintf(db_path, sizeof db_path, "/dev/shm/h2d-pcfuzz-%d.sqlite", (int)getpid());
    snprintf(db_uri, sizeof db_uri, "file:%s?mode=ro", db_path);
    return 0;
}

static void check_error(const h2d_result *r) {
    if (!r->message[0] || r->ncols != 0 || r->rows != 0)
        abort();
    for (const char *p = r->message; *p; p++)
        if ((unsigned char)*p < 0x20)
            abort();
}

static uint8_t *valid_bytes(const h2d_column *c, size_t n) {
    uint8_t *ok = malloc(n ? n : 1);
    if (!ok)
        abort();
    for (size_t i = 0; i < n; i++)
        ok[i] = (uint8_t)h2d_valid(c, i);
    return ok;
}

static int by_thread_time(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Events from the calls themselves: one per call with a thread and a start, the range "ending" at its end. */
static void attribute(const h2d_result *c) {
    size_t n = c->rows, m = 0;
    int64_t *rows = malloc((n ? n : 1) * 3 * sizeof *rows);
    uint8_t *tid_ok = valid_bytes(&c->cols[H2D_C_TID], n), *start_ok = valid_bytes(&c->cols[H2D_C_START], n),
            *end_ok = valid_bytes(&c->cols[H2D_C_END], n);
    const int64_t *tid = c->cols[H2D_C_TID].data, *start = c->cols[H2D_C_START].data, *end = c->cols[H2D_C_END].data;
    if (!rows)
        abort();
    for (size_t i = 0; i < n; i++)
        if (tid_ok[i] && start_ok[i]) {
            rows[3 * m] = tid[i];
            rows[3 * m + 1] = start[i];
            rows[3 * m + 2] = end_ok[i] ? end[i] : 0;
            m++;
        }
    qsort(rows, m, 3 * sizeof *rows, by_thread_time);
    size_t k = 0;   /* unique (thread, time), as nvtx_events has them */
    for (size_t j = 0; j < m; j++)
        if (!k || rows[3 * j] != rows[3 * (k - 1)] || rows[3 * j + 1] != rows[3 * (k - 1) + 1]) {
            memmove(&rows[3 * k], &rows[3 * j], 3 * sizeof *rows);
            k++;
        }
    int64_t *et = malloc((k ? k : 1) * 8 * 4), *ev_t = et + k, *ev_end = et + 2 * k, *ev_id = et + 3 * k;
    uint8_t *all = malloc(k ? k : 1);
    int64_t *rid = malloc((n ? n : 1) * 8), *rg = malloc((n ? n : 1) * 8);
    uint8_t *rok = malloc(n ? n : 1);
    if (!et || !all || !rid || !rg || !rok)
        abort();
    for (size_t j = 0; j < k; j++) {
        et[j] = rows[3 * j];
        ev_t[j] = rows[3 * j + 1];
        ev_end[j] = rows[3 * j + 2];
        ev_id[j] = (int64_t)j;
        all[j] = (uint8_t)(j % 3 != 0);
    }
    h2d_events ev = {et, ev_t, ev_id, ev_end, ev_id, all, all, all, k};
    if (h2d_nvtx_attrib(tid, tid_ok, start, start_ok, end, end_ok, n, &ev, rid, rok, rg) != H2D_OK)
        abort();   /* the events are sorted and unique */
    for (size_t i = 0; i < n; i++)
        if (rok[i] && (rid[i] < 0 || (size_t)rid[i] >= k || ev_t[rid[i]] > start[i] || et[rid[i]] != tid[i]))
            abort();
    free(rows), free(tid_ok), free(start_ok), free(end_ok), free(et), free(all), free(rid), free(rg), free(rok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(db_path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    h2d_result mem;
    if (h2d_read_ints(db_uri, sql_of[0], kinds_of[0], (int)strlen(kinds_of[0]), &mem) != H2D_OK) {
        check_error(&mem);
        return 0;
    }
    size_t n = mem.rows, cap = h2d_index_slots(n);
    h2d_slot *slots = cap ? malloc(cap * sizeof *slots) : NULL;
    if (!slots)
        abort();
    const int64_t *key = mem.cols[4].data, *pid = mem.cols[5].data;
    uint8_t *key_ok = valid_bytes(&mem.cols[4], n), *pid_ok = valid_bytes(&mem.cols[5], n);
    h2d_index_build(key, key_ok, n, slots, cap);
    for (int i = 1; i < n_statements; i++) {
        h2d_result calls;
        if (h2d_read_ints(db_uri, sql_of[i], kinds_of[i], H2D_C_N, &calls) != H2D_OK) {
            check_error(&calls);
            continue;
        }
        size_t m = calls.rows;
        const int64_t *corr = calls.cols[H2D_C_CORR].data, *tid = calls.cols[H2D_C_TID].data;
        uint8_t *corr_ok = valid_bytes(&calls.cols[H2D_C_CORR], m), *tid_ok = valid_bytes(&calls.cols[H2D_C_TID], m);
        int64_t *match = malloc((m ? m : 1) * sizeof *match);
        if (!match)
            abort();
        h2d_match(slots, cap, pid, pid_ok, n, corr, corr_ok, tid, tid_ok, m, match);
        for (size_t r = 0; r < m; r++) {
            int64_t row = match[r];
            if (row < -1 || row >= (int64_t)n)
                abort();
            if (row >= 0 && (!key_ok[row] || !corr_ok[r] || key[row] != corr[r] ||
                             (pid_ok[row] && (!tid_ok[r] || pid[row] != H2D_PID_OF(tid[r])))))
                abort();   /* a match is the call's key, and its process or none */
        }
        attribute(&calls);
        free(match), free(corr_ok), free(tid_ok);
        h2d_free(&calls);
    }
    free(slots), free(key_ok), free(pid_ok);
    h2d_free(&mem);
    return 0;
}
