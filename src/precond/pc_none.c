/* pc_none.c -- the identity preconditioner ("none"): z = r (converting precision if r and
 * z differ; the Krylov drivers skip it altogether). */
#include "precond/precond_impl.h"

static sap_status none_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    return sap__ops(P->ctx)->copy(P->ctx, r, z);
}

const sap_precond_type sap__pc_none = {
    .name = "none",
    .help = "the identity (no preconditioning)",
    .mixed_precision_apply = 1,
    .identity = 1,
    .apply = none_apply,
};
