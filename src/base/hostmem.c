/* hostmem.c -- how much host memory this process can really get, and the check made
 * before large allocations: the least of the kernel's MemAvailable, the cgroup's memory
 * limit less its usage (v2 memory.max / memory.current, v1 memory.limit_in_bytes /
 * memory.usage_in_bytes) and the address-space and data-segment limits (RLIMIT_AS,
 * RLIMIT_DATA) less what the process already maps.  With overcommit a malloc of more than
 * that succeeds and the process is killed later, when the pages are touched; asking first
 * turns that into an error that names the bytes. */
#define _POSIX_C_SOURCE 200809L
#include "base/base.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The first number after 'key' in a "key: value unit" file (/proc/...), in bytes
 * (kB units converted); -1 when absent. */
static double proc_value(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    const size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            double x;
            char unit[8] = "";
            if (sscanf(line + kl + 1, "%lf %7s", &x, unit) >= 1) v = strcmp(unit, "kB") == 0 ? x * 1024.0 : x;
            break;
        }
    fclose(f);
    return v;
}

/* A number alone in a file ("max" or unreadable: -1). */
static double file_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    double x = -1;
    char buf[64] = "";
    if (fgets(buf, sizeof(buf), f) && strncmp(buf, "max", 3) != 0 && sscanf(buf, "%lf", &x) != 1) x = -1;
    fclose(f);
    return x;
}

static void take_min(double *best, const char **why, double v, const char *what)
{
    if (v >= 0 && (*best < 0 || v < *best)) {
        *best = v;
        *why = what;
    }
}

double sap__host_mem_available(const char **source)
{
    double best = -1;
    const char *why = "unknown";
    take_min(&best, &why, proc_value("/proc/meminfo", "MemAvailable"), "MemAvailable");
    /* cgroup v2 (the process' own group is mounted at /sys/fs/cgroup in containers) */
    double lim = file_number("/sys/fs/cgroup/memory.max"), use = file_number("/sys/fs/cgroup/memory.current");
    if (lim >= 0 && use >= 0) take_min(&best, &why, lim > use ? lim - use : 0, "cgroup memory.max");
    /* cgroup v1 (an unlimited group reports a huge number: harmless in the minimum) */
    lim = file_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    use = file_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (lim >= 0 && use >= 0) take_min(&best, &why, lim > use ? lim - use : 0, "cgroup memory.limit_in_bytes");
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        double vm = proc_value("/proc/self/status", "VmSize");
        double cur = (double)r.rlim_cur;
        take_min(&best, &why, vm >= 0 && cur > vm ? cur - vm : (vm >= 0 ? 0 : cur), "RLIMIT_AS");
    }
    if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        double vd = proc_value("/proc/self/status", "VmData");
        double cur = (double)r.rlim_cur;
        take_min(&best, &why, vd >= 0 && cur > vd ? cur - vd : (vd >= 0 ? 0 : cur), "RLIMIT_DATA");
    }
    if (best < 0) { /* no /proc: the free pages */
        long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && psz > 0) take_min(&best, &why, (double)pages * (double)psz, "free pages");
    }
    if (source) *source = why;
    return best;
}

double sap__host_address_space_left(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return -1;
    const double vm = proc_value("/proc/self/status", "VmSize"), cur = (double)r.rlim_cur;
    if (vm < 0) return -1;
    return cur > vm ? cur - vm : 0;
}

sap_status sap__mem_check(sap_context *ctx, const char *step, double bytes)
{
    if (!(bytes >= SAP_MEM_CHECK_MIN)) return SAP_OK;
    const char *why = NULL;
    const double avail = sap__host_mem_available(&why);
    if (avail < 0 || bytes <= avail) return SAP_OK;
    return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "%s needs %.3g GB of host memory, %.3g GB available (%s)", step,
                     bytes / 1e9, avail / 1e9, why);
}
