/* test_fuzz_regress.c -- replays the inputs that the libFuzzer harnesses of fuzz/ once
 * found crashing, leaking or timing out (fuzz/regress/HARNESS/, one file per finding;
 * fuzz/README.md and bench/results/fuzz.md list them with their fixes), and the seed
 * corpus (fuzz/corpus/HARNESS/), through the very harness functions, compiled here
 * without libFuzzer: a broken invariant aborts, a sanitizer build reports memory errors
 * and leaks, and every input must finish within 10 s (the harnesses' -timeout). */
#define _POSIX_C_SOURCE 200809L
#define SAP_FUZZ_NO_ENTRY 1
#include "../fuzz/fuzz_gen.c"
#include "../fuzz/fuzz_mm.c"
#include "../fuzz/fuzz_mm_gz.c"
#include "../fuzz/fuzz_options.c"
#include "../fuzz/fuzz_solve.c"

#include "testing.h"

#include <dirent.h>
#include <time.h>

typedef int (*harness_fn)(const uint8_t *data, size_t size);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the file's bytes (a .hex file: its hex digits decoded); NULL if unreadable */
static uint8_t *read_input(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = (uint8_t *)malloc(cap);
    for (size_t r; (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) buf = (uint8_t *)realloc(buf, cap *= 2);
    }
    fclose(f);
    size_t len = strlen(path);
    if (len > 4 && strcmp(path + len - 4, ".hex") == 0) {
        size_t m = 0;
        int half = -1;
        for (size_t i = 0; i < n; i++) {
            int c = buf[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (v < 0) continue;
            if (half < 0) half = v;
            else {
                buf[m++] = (uint8_t)(half * 16 + v);
                half = -1;
            }
        }
        n = m;
    }
    *size = n;
    return buf;
}

/* every file of SAP_SOURCE_DIR/dir/name/ through fn; returns how many */
static int replay(const char *dir, const char *name, harness_fn fn)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s/%s", SAP_SOURCE_DIR, dir, name);
    DIR *d = opendir(path);
    if (!d) return 0;
    int count = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char file[2048];
        snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
        size_t size = 0;
        uint8_t *data = read_input(file, &size);
        CHECK_MSG(data != NULL, "cannot read %s", file);
        if (!data) continue;
        double t0 = now();
        fn(data, size); /* aborts on a broken invariant */
        double t = now() - t0;
        CHECK_MSG(t < 10.0, "%s took %.1f s (the fuzzers' timeout is 10 s)", file, t);
        free(data);
        count++;
    }
    closedir(d);
    return count;
}

int main(void)
{
    static const struct {
        const char *name;
        harness_fn fn;
    } harnesses[] = {{"fuzz_gen", sap_fuzz_gen},
                     {"fuzz_mm", sap_fuzz_mm},
                     {"fuzz_mm_gz", sap_fuzz_mm_gz},
                     {"fuzz_options", sap_fuzz_options},
                     {"fuzz_solve", sap_fuzz_solve}};
    int regress = 0, seeds = 0;
    for (size_t i = 0; i < sizeof(harnesses) / sizeof(harnesses[0]); i++) {
        int r = replay("fuzz/regress", harnesses[i].name, harnesses[i].fn);
        int s = replay("fuzz/corpus", harnesses[i].name, harnesses[i].fn);
        printf("%-13s %3d regression inputs, %3d seeds\n", harnesses[i].name, r, s);
        regress += r;
        seeds += s;
    }
    CHECK_MSG(seeds > 0, "no seed corpus under %s/fuzz/corpus", SAP_SOURCE_DIR);
    printf("test_fuzz_regress: %d regression inputs and %d seeds replayed, %d checks, %d failures\n", regress, seeds,
           sap_test_checks, sap_test_failures);
    return sap_test_failures ? 1 : 0;
}
