/* pc_sap.h -- what the SaP preconditioners (pc_sap.c) offer beyond the preconditioner
 * interface: their band options, a band source on the backend, and what the last numeric
 * setup chose.  Used by the banded solver and the sparse solver.  Internal. */
#ifndef SAP_PC_SAP_H
#define SAP_PC_SAP_H

#include "band/band_impl.h"
#include "precond/precond_impl.h"

/* Options of a "sap-d" / "sap-c" / "sap" preconditioner (before its numeric setup). */
sap_status sap__pc_sap_configure(sap_precond *P, const sap_band_options *opt);
/* The matrix' values live on the backend in the BAND layout already (the caller keeps
 * them alive): the next numeric setups fill the factors from there.  NULL: from the CSR. */
sap_status sap__pc_sap_set_source(sap_precond *P, const sap_band_source *src);
/* What the last numeric setup did. */
typedef struct sap_pc_sap_info {
    sap_band_method method; /* SAPD or SAPC */
    sap_int P, K, boosted, dropped;
    double t_lu, t_bc, t_spk, t_lurdcd;
    char reason[160];
} sap_pc_sap_info;
sap_status sap__pc_sap_info(const sap_precond *P, sap_pc_sap_info *info);
#endif /* SAP_PC_SAP_H */
