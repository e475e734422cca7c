/* fuzz_gen.c -- the generator spec parser (sap_gen_spec) and the generators behind it.
 *
 * The input is the spec text ("gen:NAME:key=value,...").  The context's allocator fails
 * beyond 16 MB, so a spec asking for a large matrix ends in SAP_ERR_OUT_OF_MEMORY or
 * SAP_ERR_TOO_LARGE after the parsing (and runs those paths) instead of exhausting the
 * machine or the time limit.  Invariants: a success is a square canonical CSR with
 * finite values; the same spec gives the bit-identical matrix again (checked for small
 * ones) and through sap_matrix_load; every error leaves a message; nothing leaks. */
#include "fuzz_common.h"

#define FUZZ_GEN_BUDGET ((size_t)16 << 20)

int sap_fuzz_gen(const uint8_t *data, size_t size)
{
    char *spec = fuzz_strndup(data, size);
    fuzz_budget budget;
    sap_context *ctx = fuzz_context(&budget, FUZZ_GEN_BUDGET);
    sap_csr *A = NULL;
    sap_status st = sap_gen_spec(ctx, spec, &A);
    fuzz_check_error(ctx, st, "sap_gen_spec");
    if (st < 0) {
        FUZZ_CHECK(A == NULL, "an error (%s) left a matrix", sap_status_name(st));
        FUZZ_CHECK(st == SAP_ERR_INVALID || st == SAP_ERR_OUT_OF_MEMORY || st == SAP_ERR_TOO_LARGE,
                   "sap_gen_spec: unexpected %s (%s)", sap_status_name(st), sap_context_last_error(ctx));
    } else {
        FUZZ_CHECK(st == SAP_OK, "sap_gen_spec returned the warning %s", sap_status_name(st));
        fuzz_check_csr(A, 0, "sap_gen_spec");
        FUZZ_CHECK(A->nrows == A->ncols && A->nrows >= 1, "generated a %lld x %lld matrix", (long long)A->nrows,
                   (long long)A->ncols);
        if (A->nnz <= 20000) {
            sap_csr *B = NULL;
            sap_status sb = sap_matrix_load(ctx, spec, NULL, &B);
            fuzz_check_error(ctx, sb, "sap_matrix_load");
            if (sb != SAP_ERR_OUT_OF_MEMORY) {
                FUZZ_CHECK(sb == SAP_OK, "the same spec again: %s (%s)", sap_status_name(sb),
                           sap_context_last_error(ctx));
                FUZZ_CHECK(fuzz_csr_equal(A, B), "the same spec gave a different matrix the second time");
            }
            sap_csr_destroy(B);
        }
    }
    sap_csr_destroy(A);
    fuzz_context_done(ctx, &budget);
    free(spec);
    return 0;
}

#ifndef SAP_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return sap_fuzz_gen(data, size); }
#endif
