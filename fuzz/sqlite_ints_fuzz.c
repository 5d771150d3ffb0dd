/* libFuzzer harness of the compiled reader (nsysh2d/source/_sqlite_ints_core.h): each input is a whole SQLite
 * file, written to a private file and read with the statements ingest.py really runs (fuzz/run.sh writes them
 * to the file named by H2D_FUZZ_SQL: one per line, "<kinds><TAB><statement>"). What must hold: no crash, no
 * sanitizer report, no hang (libFuzzer's -timeout), and every call ends in H2D_OK with rows, or an error with
 * a message on one line and nothing held. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../nsysh2d/source/_sqlite_ints_core.h"

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
        fprintf(stderr, "H2D_FUZZ_SQL must name the statements file (fuzz/run.sh writes it)\n");
        abort();
    }
    static char line[1 << 16];
    while (n_statements < MAX_STATEMENTS && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = 0;
        line[strcspn(tab + 1, "\n") + (tab + 1 - line)] = 0;
        kinds_of[n_statements] = strdup(line);
        sql_of[n_statements] = strdup(tab + 1);
        n_statements++;
    }
    fclose(f);
    if (!n_statements)
        abort();
    snprintf(db_path, sizeof db_path, "/dev/shm/h2d-fuzz-%d.sqlite", (int)getpid());
    snprintf(db_uri, sizeof db_uri, "file:%s?mode=ro", db_path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(db_path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    for (int i = 0; i < n_statements; i++) {
        h2d_result r;
        int code = h2d_read_ints(db_uri, sql_of[i], kinds_of[i], (int)strlen(kinds_of[i]), &r);
        if (code == H2D_OK) {
            /* Touch every value and bitmap byte: a wrong length shows up under AddressSanitizer. */
            volatile uint64_t sum = 0;
            for (int c = 0; c < r.ncols; c++) {
                size_t width = kinds_of[i][c] == 'q' ? 8 : 4;
                for (size_t b = 0; b < r.rows * width; b++)
                    sum += ((uint8_t *)r.cols[c].data)[b];
                if (r.cols[c].valid)
                    for (size_t b = 0; b < (r.rows + 7) / 8; b++)
                        sum += r.cols[c].valid[b];
                else if (r.cols[c].nulls)
                    abort();
            }
            h2d_free(&r);
        } else {
            if (!r.message[0] || r.ncols != 0 || r.rows != 0)
                abort();   /* an error must say why and hold nothing */
            for (const char *p = r.message; *p; p++)
                if ((unsigned char)*p < 0x20)
                    abort();   /* and say it on one line (SQLite may quote a damaged schema) */
        }
    }
    return 0;
}
