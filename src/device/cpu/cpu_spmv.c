/* cpu_spmv.c -- sparse matrix-vector products of the cpu backend in double and float
 * (one template, cpu_spmv_t.h, compiled per precision). */
#include "device/cpu/cpu_internal.h"

#define S d
#define REAL double
#include "device/cpu/cpu_spmv_t.h"
#undef S
#undef REAL

#define S s
#define REAL float
#include "device/cpu/cpu_spmv_t.h"
#undef S
#undef REAL
