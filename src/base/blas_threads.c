/* blas_threads.c -- OpenBLAS's own thread count, where the BLAS linked is OpenBLAS (weak
 * symbols: elsewhere these do nothing).  A batch spreads its matrices over OpenMP threads
 * and runs its BLAS calls on one thread each (a threaded BLAS inside each oversubscribes the
 * cores: measured 500x slower on 2 cores); a single call small enough takes fewer BLAS
 * threads than the cores (waking a pool of threads for a millisecond of work waits on the
 * slowest of them). */
#include "base/base.h"

extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

int sap__blas_threads(int n)
{
    if (n <= 0 || !openblas_set_num_threads || !openblas_get_num_threads) return 0;
    const int was = openblas_get_num_threads();
    if (n < was) openblas_set_num_threads(n);
    return n < was ? was : 0;
}

int sap__blas_threads_for(double flops, double per)
{
    const double k = per > 0 ? flops / per : 1.0;
    return sap__blas_threads(k >= 1.0e6 ? 1000000 : k >= 1.0 ? (int)k : 1);
}

int sap__blas_threads_now(void)
{
    return openblas_get_num_threads ? openblas_get_num_threads() : 1;
}

void sap__blas_threads_restore(int was)
{
    if (was > 0 && openblas_set_num_threads) openblas_set_num_threads(was);
}
