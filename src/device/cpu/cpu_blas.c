/* cpu_blas.c -- BLAS-1 kernels of the cpu backend in double and float (one template,
 * cpu_blas_t.h, compiled per precision). */
#include "device/cpu/cpu_internal.h"

#include <math.h>

#define S d
#define REAL double
#include "device/cpu/cpu_blas_t.h"
#undef S
#undef REAL

#define S s
#define REAL float
#include "device/cpu/cpu_blas_t.h"
#undef S
#undef REAL
