/* io.c -- Matrix Market I/O benchmark.
 *
 * For every matrix in MANIFEST.tsv of the matrix directory (first argument, else
 * $SAP_MATRIX_DIR, else the build default) it measures
 *   load     reading the file into memory, decompressing .gz (sap__mm_load),
 *   parse1   sap_mm_parse_csr on the in-memory text with 1 thread,
 *   parse    the same with the context's threads (OpenMP chunks),
 *   read     sap_mm_read_csr: load + parse + CSR build, what a user calls,
 *   write    sap_mm_write_csr of the (expanded) matrix to a plain .mtx file,
 * each repeated until --min-time seconds (default 0.2) have passed after one warm-up
 * run, and reports MB/s of text (decompressed bytes).  With --cpu-time every operation
 * runs on 1 thread and its time is the least thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID) of the repetitions (at least 3): insensitive to preemption
 * on a shared machine; parse is then parse1.  Prints a table and writes
 * io.csv and io.md to --out (default bench/results of the source tree).
 *
 * With --compare CSV (written by bench/io_fmm.py: matrix,text_mb,fmm1_s,fmm_s) the
 * fast_matrix_market timings of the same texts are added as reference columns.
 *
 *   io [MATRIX_DIR] [--out DIR] [--min-time S] [--threads N] [--only NAME] [--compare CSV]
 *      [--cpu-time] */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"
#include "base/base.h"

#include "matrix/mm_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

typedef struct row {
    char name[128];
    long long n, nnz_file, nnz_csr;
    double mb, gz_mb, wmb; /* text read, gzip file, text written */
    double t_load, t_parse1, t_parse, t_read, t_write;
    double t_fmm1, t_fmm; /* reference (0: none) */
} row;

typedef struct ref {
    char name[128];
    double fmm1, fmm;
} ref;

static int nrefs = 0;
static ref refs[1024];

static void load_refs(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open; no reference columns\n", path);
        return;
    }
    char line[1024];
    while (fgets(line, sizeof(line), f) && nrefs < 1024) {
        ref *r = &refs[nrefs];
        double mb;
        if (sscanf(line, "%127[^,],%lf,%lf,%lf", r->name, &mb, &r->fmm1, &r->fmm) == 4) nrefs++;
    }
    fclose(f);
}

static const ref *find_ref(const char *name)
{
    for (int k = 0; k < nrefs; k++)
        if (!strcmp(refs[k].name, name)) return &refs[k];
    return NULL;
}

static double rate(double mb, double t) { return t > 0 ? mb / t : 0.0; }

static double min_time = 0.2;
static int cpu_time = 0;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* mean seconds of fn over repetitions lasting at least min_time, after one warm-up; with
 * --cpu-time the least thread CPU time of those repetitions (at least 3) */
#define TIME_IT(result, body)                                                                                          \
    do {                                                                                                               \
        {                                                                                                              \
            body;                                                                                                      \
        }                                                                                                              \
        int reps_ = 0;                                                                                                 \
        double t0_ = sap__wtime(), el_, best_ = 1e300;                                                                 \
        do {                                                                                                           \
            double c0_ = cpu_time ? thread_cpu() : 0.0;                                                                \
            body;                                                                                                      \
            if (cpu_time) {                                                                                            \
                double c_ = thread_cpu() - c0_;                                                                        \
                if (c_ < best_) best_ = c_;                                                                            \
            }                                                                                                          \
            reps_++;                                                                                                   \
            el_ = sap__wtime() - t0_;                                                                                  \
        } while (el_ < min_time || (cpu_time && reps_ < 3));                                                           \
        (result) = cpu_time ? best_ : el_ / reps_;                                                                     \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void cpu_model(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ') p++;
                p[strcspn(p, "\n")] = '\0';
                snprintf(out, len, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static void command_output(const char *cmd, char *out, size_t len)
{
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (fgets(out, (int)len, p)) out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("SAP_MATRIX_DIR");
    if (!dir || !*dir) dir = SAP_MATRIX_DIR_DEFAULT;
    const char *outdir = SAP_SOURCE_DIR "/bench/results";
    const char *only = NULL;
    int threads = 0;
    char cmdline[2048] = "";
    for (int k = 0; k < argc; k++) {
        strncat(cmdline, argv[k], sizeof(cmdline) - strlen(cmdline) - 2);
        if (k + 1 < argc) strncat(cmdline, " ", sizeof(cmdline) - strlen(cmdline) - 1);
    }
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--out") && k + 1 < argc)
            outdir = argv[++k];
        else if (!strcmp(argv[k], "--min-time") && k + 1 < argc)
            min_time = atof(argv[++k]);
        else if (!strcmp(argv[k], "--threads") && k + 1 < argc)
            threads = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--only") && k + 1 < argc)
            only = argv[++k];
        else if (!strcmp(argv[k], "--compare") && k + 1 < argc)
            load_refs(argv[++k]);
        else if (!strcmp(argv[k], "--cpu-time"))
            cpu_time = 1;
        else if (argv[k][0] == '-') {
            fprintf(stderr,
                    "usage: %s [MATRIX_DIR] [--out DIR] [--min-time S] [--threads N] [--only NAME] [--compare CSV] "
                    "[--cpu-time]\n",
                    argv[0]);
            return 2;
        } else
            dir = argv[k];
    }

    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    if (cpu_time) threads = 1;
    cfg.threads = threads;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    int T = sap_context_threads(ctx);
    char load_start[128];
    command_output("cat /proc/loadavg 2>/dev/null", load_start, sizeof(load_start));

    char mpath[2048];
    snprintf(mpath, sizeof(mpath), "%s/MANIFEST.tsv", dir);
    FILE *mf = fopen(mpath, "r");
    if (!mf) {
        fprintf(stderr, "%s: cannot open (give the matrix directory as the first argument)\n", mpath);
        return 1;
    }
    /* writes go to RAM (/dev/shm) where possible: the library's speed, not the disk's (on
     * this kind of machine creating a small file on ext4 alone takes ~0.2 ms) */
    char tmpout[512];
    const char *tmpd = getenv("TMPDIR");
    const char *wdir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmpd && *tmpd ? tmpd : "/tmp";
    snprintf(tmpout, sizeof(tmpout), "%s/sap_bench_io_%ld.mtx", wdir, (long)getpid());

    row *rows = calloc(256, sizeof(row));
    int nrows = 0, cap = 256;
    char line[4096];
    int header = 1;
    printf("%-22s %9s %10s %8s | %7s %7s %7s %7s %7s | %7s %7s  (MB/s of text)\n", "matrix", "n", "entries", "text MB",
           "load", "parse1", "parse", "read", "write", "fmm1", "fmm");
    while (fgets(line, sizeof(line), mf)) {
        if (header) {
            header = 0;
            continue;
        }
        char name[128], file[256];
        long long m, n, nnz;
        if (sscanf(line, "%127[^\t]\t%255[^\t]\t%lld\t%lld\t%lld", name, file, &m, &n, &nnz) != 5) continue;
        if (only && strcmp(only, name)) continue;
        char path[2400];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        if (nrows == cap) {
            cap *= 2;
            rows = realloc(rows, sizeof(row) * (size_t)cap);
        }
        row *r = &rows[nrows];
        memset(r, 0, sizeof(*r));
        snprintf(r->name, sizeof(r->name), "%s", name);
        r->n = n;
        r->nnz_file = nnz;
        FILE *gf = fopen(path, "rb");
        if (gf) {
            fseek(gf, 0, SEEK_END);
            r->gz_mb = (double)ftell(gf) / 1e6;
            fclose(gf);
        }

        char *text = NULL;
        size_t len = 0;
        sap_status st = sap__mm_load(ctx, path, &text, &len, NULL);
        if (st != SAP_OK) {
            fprintf(stderr, "%s: %s\n", name, sap_context_last_error(ctx));
            continue;
        }
        r->mb = (double)len / 1e6;
        sap__free(ctx, text);
        TIME_IT(r->t_load, {
            char *t = NULL;
            size_t l = 0;
            sap__mm_load(ctx, path, &t, &l, NULL);
            sap__free(ctx, t);
        });
        sap__mm_load(ctx, path, &text, &len, NULL);
        sap_csr *A = NULL;
        sap_context_set_threads(ctx, 1);
        TIME_IT(r->t_parse1, {
            sap_csr *B = NULL;
            if (sap_mm_parse_csr(ctx, text, len, NULL, &B, NULL) != SAP_OK)
                fprintf(stderr, "%s: %s\n", name, sap_context_last_error(ctx));
            sap_csr_destroy(B);
        });
        sap_context_set_threads(ctx, threads);
        if (cpu_time)
            r->t_parse = r->t_parse1;
        else
            TIME_IT(r->t_parse, {
            sap_csr *B = NULL;
            sap_mm_parse_csr(ctx, text, len, NULL, &B, NULL);
            sap_csr_destroy(B);
        });
        sap__free(ctx, text);
        TIME_IT(r->t_read, {
            sap_csr *B = NULL;
            sap_mm_read_csr(ctx, path, NULL, &B, NULL);
            sap_csr_destroy(B);
        });
        sap_mm_read_csr(ctx, path, NULL, &A, NULL);
        r->nnz_csr = A ? A->nnz : 0;
        /* writing the expanded matrix: text of a different size, MB/s of what is written */
        if (A) {
            TIME_IT(r->t_write, sap_mm_write_csr(A, tmpout, NULL));
            FILE *wf = fopen(tmpout, "rb");
            if (wf) {
                fseek(wf, 0, SEEK_END);
                r->wmb = (double)ftell(wf) / 1e6;
                fclose(wf);
            }
            remove(tmpout);
        }
        sap_csr_destroy(A);
        const ref *rf = find_ref(r->name);
        if (rf) {
            r->t_fmm1 = rf->fmm1;
            r->t_fmm = rf->fmm;
        }
        printf("%-22s %9lld %10lld %8.2f | %7.0f %7.0f %7.0f %7.0f %7.0f | %7.0f %7.0f\n", r->name, r->n, r->nnz_file,
               r->mb, r->mb / r->t_load, r->mb / r->t_parse1, r->mb / r->t_parse, r->mb / r->t_read,
               rate(r->wmb, r->t_write), rate(r->mb, r->t_fmm1), rate(r->mb, r->t_fmm));
        fflush(stdout);
        nrows++;
    }
    fclose(mf);

    /* aggregates: 7 measures, total MB / total seconds and the median over matrices */
    enum { LOAD, PARSE1, PARSE, READ, WRITE, FMM1, FMM, NM };
    static const char *mname[NM] = {"load", "parse1", "parse", "read", "write", "fmm1", "fmm"};
    double tot_mb = 0, tot_gz = 0, agg[NM], med[NM];
    double *vals = malloc(sizeof(double) * (size_t)(nrows + 1));
    for (int m = 0; m < NM; m++) {
        double mb = 0, sec = 0;
        int nv = 0;
        for (int k = 0; k < nrows; k++) {
            row *r = &rows[k];
            double t[NM] = {r->t_load, r->t_parse1, r->t_parse, r->t_read, r->t_write, r->t_fmm1, r->t_fmm};
            double b = m == WRITE ? r->wmb : r->mb;
            if (t[m] <= 0) continue;
            mb += b;
            sec += t[m];
            vals[nv++] = b / t[m];
        }
        agg[m] = sec > 0 ? mb / sec : 0;
        med[m] = median(vals, nv);
    }
    free(vals);
    for (int k = 0; k < nrows; k++) {
        tot_mb += rows[k].mb;
        tot_gz += rows[k].gz_mb;
    }
    const int nshow = nrefs > 0 ? NM : FMM1;
    printf("\n%d matrices, %.1f MB of text (%.1f MB gzip), %d threads\n", nrows, tot_mb, tot_gz, T);
    printf("%-36s", "MB/s");
    for (int m = 0; m < nshow; m++) printf(" %8s", mname[m]);
    printf("\n%-36s", "aggregate (total MB / total s)");
    for (int m = 0; m < nshow; m++) printf(" %8.0f", agg[m]);
    printf("\n%-36s", "median over matrices");
    for (int m = 0; m < nshow; m++) printf(" %8.0f", med[m]);
    printf("\n");

    /* machine description */
    struct utsname un;
    char uname_s[600] = "unknown";
    if (uname(&un) == 0) snprintf(uname_s, sizeof(uname_s), "%s %s %s", un.sysname, un.release, un.machine);
    char cpu[256];
    cpu_model(cpu, sizeof(cpu));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char commit[128], dirty[256], date[64], load_end[128];
    command_output("git -C " SAP_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null", commit, sizeof(commit));
    command_output("git -C " SAP_SOURCE_DIR " status --porcelain 2>/dev/null | head -1", dirty, sizeof(dirty));
    command_output("cat /proc/loadavg 2>/dev/null", load_end, sizeof(load_end));
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));

    char path[1200];
    snprintf(path, sizeof(path), "%s/io.csv", outdir);
    FILE *csv = fopen(path, "w");
    if (csv) {
        fprintf(csv, "matrix,n,entries,csr_nnz,text_mb,gz_mb,written_mb,load_s,parse1_s,parse_s,read_s,write_s,fmm1_s,"
                     "fmm_s,load_mbs,parse1_mbs,parse_mbs,read_mbs,write_mbs,fmm1_mbs,fmm_mbs\n");
        for (int k = 0; k < nrows; k++) {
            row *r = &rows[k];
            fprintf(csv,
                    "%s,%lld,%lld,%lld,%.4f,%.4f,%.4f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,"
                    "%.1f\n",
                    r->name, r->n, r->nnz_file, r->nnz_csr, r->mb, r->gz_mb, r->wmb, r->t_load, r->t_parse1, r->t_parse,
                    r->t_read, r->t_write, r->t_fmm1, r->t_fmm, rate(r->mb, r->t_load), rate(r->mb, r->t_parse1),
                    rate(r->mb, r->t_parse), rate(r->mb, r->t_read), rate(r->wmb, r->t_write), rate(r->mb, r->t_fmm1),
                    rate(r->mb, r->t_fmm));
        }
        fclose(csv);
        printf("wrote %s\n", path);
    } else {
        fprintf(stderr, "cannot write %s\n", path);
    }
    snprintf(path, sizeof(path), "%s/io.md", outdir);
    FILE *md = fopen(path, "w");
    if (md) {
        fprintf(md, "# Matrix Market I/O benchmark\n\n");
        fprintf(md, "- date: %s\n", date);
        fprintf(md, "- machine: %s; CPU: %s; %ld cores online; %d threads used\n", uname_s, cpu, cores, T);
        fprintf(md, "- load average before / after: %s / %s\n", load_start, load_end);
        fprintf(md, "- commit: %s%s\n", commit[0] ? commit : "unknown",
                dirty[0] ? " (working tree has uncommitted changes)" : "");
        fprintf(md, "- command: `%s`\n", cmdline);
        fprintf(md, "- matrices: %d from %s (%.1f MB of text, %.1f MB gzip)\n", nrows, dir, tot_mb, tot_gz);
        if (cpu_time)
            fprintf(md,
                    "- each time is the least thread CPU time of the repetitions (>= 3, lasting >= %.2f s in all), "
                    "1 thread, after one warm-up run\n\n",
                    min_time);
        else
            fprintf(md, "- each time is the mean over repetitions lasting >= %.2f s, after one warm-up run\n\n",
                    min_time);
        fprintf(md, "Columns (MB/s of decompressed text, 1 MB = 10^6 bytes):\n\n");
        fprintf(md, "- load: read the .gz file and decompress it into memory (zlib gzread, 1 MiB buffer)\n");
        fprintf(md, "- parse1: `sap_mm_parse_csr` on the text in memory, 1 thread (tokenize, convert, build the "
                    "canonical CSR with symmetric expansion)\n");
        fprintf(md, "- parse: the same with %d threads (the entry section split at newlines)\n", T);
        fprintf(md, "- read: `sap_mm_read_csr` from the .gz file (load + parse + build)\n");
        fprintf(md, "- write: `sap_mm_write_csr` of the expanded matrix to a plain .mtx in %s, MB/s of the "
                    "bytes written\n",
                wdir);
        if (nrefs > 0)
            fprintf(md,
                    "- fmm1, fmm: reference, fast_matrix_market %s `read_coo` of the same text from memory "
                    "(BytesIO) into triplets (no CSR), 1 thread / all threads (bench/io_fmm.py)\n",
                    "(the reader of scipy.io.mmread)");
        fprintf(md, "\n## Aggregate\n\n|");
        for (int m = 0; m < nshow; m++) fprintf(md, " | %s", mname[m]);
        fprintf(md, " |\n|---");
        for (int m = 0; m < nshow; m++) fprintf(md, "|---:");
        fprintf(md, "|\n| total MB / total s");
        for (int m = 0; m < nshow; m++) fprintf(md, " | %.0f", agg[m]);
        fprintf(md, " |\n| median over matrices");
        for (int m = 0; m < nshow; m++) fprintf(md, " | %.0f", med[m]);
        fprintf(md, " |\n\n## Per matrix (MB/s)\n\n| matrix | n | entries | text MB");
        for (int m = 0; m < nshow; m++) fprintf(md, " | %s", mname[m]);
        fprintf(md, " |\n|---|---:|---:|---:");
        for (int m = 0; m < nshow; m++) fprintf(md, "|---:");
        fprintf(md, "|\n");
        for (int k = 0; k < nrows; k++) {
            row *r = &rows[k];
            double v[NM] = {rate(r->mb, r->t_load), rate(r->mb, r->t_parse1), rate(r->mb, r->t_parse),
                            rate(r->mb, r->t_read), rate(r->wmb, r->t_write), rate(r->mb, r->t_fmm1),
                            rate(r->mb, r->t_fmm)};
            fprintf(md, "| %s | %lld | %lld | %.2f", r->name, r->n, r->nnz_file, r->mb);
            for (int m = 0; m < nshow; m++) fprintf(md, " | %.0f", v[m]);
            fprintf(md, " |\n");
        }
        fclose(md);
        printf("wrote %s\n", path);
    } else {
        fprintf(stderr, "cannot write %s\n", path);
    }
    free(rows);
    sap_context_destroy(ctx);
    return 0;
}
