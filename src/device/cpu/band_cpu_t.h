/* band_cpu_t.h -- the cpu band kernels for one precision; included by band_cpu.c with
 * T (float or double) and F(name) (name with a precision suffix) defined.  Storage as in
 * src/band/band_impl.h: a(r, c) = a[(c - r + K) * ld + r]. */

/* LU without pivoting of an nb x nb band (half-bandwidth K, leading dimension nb) in
 * place; pivots with |p| < thr become copysign(boost, p) (+boost for 0).  l and u: K
 * elements of work.  Returns the boosted pivots. */
static sap_int F(lu)(T *a, sap_int nb, sap_int K, T thr, T boost, T *l, T *u)
{
    sap_int nboost = 0;
    T *dg = a + K * nb;
    for (sap_int k = 0; k < nb; k++) {
        T piv = dg[k];
        if (!(piv >= thr || piv <= -thr)) {
            piv = piv < 0 ? -boost : boost;
            dg[k] = piv;
            nboost++;
        }
        const sap_int kk = K < nb - 1 - k ? K : nb - 1 - k;
        if (kk == 0) continue;
        const T inv = (T)1 / piv;
        for (sap_int j = 0; j < kk; j++) {
            T *p = a + (K - 1 - j) * nb + k + 1 + j; /* a(k+1+j, k) */
            *p *= inv;
            l[j] = *p;
            u[j] = a[(K + 1 + j) * nb + k]; /* a(k, k+1+j) */
        }
        /* a(r, c) -= l(r) u(c) for r, c in k+1 .. k+kk, one diagonal dd = c - r at a time */
        for (sap_int dd = -(kk - 1); dd <= kk - 1; dd++) {
            const sap_int j0 = dd < 0 ? -dd : 0, j1 = kk - 1 - (dd > 0 ? dd : 0);
            T *restrict ar = a + (dd + K) * nb + k + 1;
            const T *restrict uu = u + dd;
            for (sap_int j = j0; j <= j1; j++) ar[j] -= l[j] * uu[j];
        }
    }
    return nboost;
}

/* UL without pivoting (A = U L, U unit upper with its multipliers above the diagonal, L
 * lower with the pivots on the diagonal) of a w x w band with leading dimension w. */
static sap_int F(ul)(T *a, sap_int w, sap_int K, T thr, T boost, T *l, T *u)
{
    sap_int nboost = 0;
    T *dg = a + K * w;
    for (sap_int k = w - 1; k >= 0; k--) {
        T piv = dg[k];
        if (!(piv >= thr || piv <= -thr)) {
            piv = piv < 0 ? -boost : boost;
            dg[k] = piv;
            nboost++;
        }
        const sap_int kk = K < k ? K : k;
        if (kk == 0) continue;
        const T inv = (T)1 / piv;
        for (sap_int j = 0; j < kk; j++) {
            T *p = a + (K + 1 + j) * w + (k - 1 - j); /* a(k-1-j, k) */
            *p *= inv;
            u[j] = *p;
            l[j] = a[(K - 1 - j) * w + k]; /* a(k, k-1-j) */
        }
        /* a(k-1-j, k-1-i) -= u_j l_i, diagonal dd = j - i */
        for (sap_int dd = -(kk - 1); dd <= kk - 1; dd++) {
            const sap_int j0 = dd > 0 ? dd : 0, j1 = kk - 1 + (dd < 0 ? dd : 0);
            T *restrict ar = a + (dd + K) * w + (k - 1);
            for (sap_int j = j0; j <= j1; j++) ar[-j] -= u[j] * l[j - dd];
        }
    }
    return nboost;
}

/* Band element (r, c) or 0 outside the band. */
static inline T F(at)(const T *a, sap_int ld, sap_int K, sap_int r, sap_int c)
{
    sap_int dd = c - r;
    return (dd > K || -dd > K) ? (T)0 : a[(dd + K) * ld + r];
}

/* z = A^{-1} z for one LU-factored partition. */
static void F(sweep)(const T *a, sap_int nb, sap_int K, T *z)
{
    for (sap_int r = 1; r < nb; r++) {
        const sap_int kk = K < r ? K : r;
        T s = z[r];
        for (sap_int j = 1; j <= kk; j++) s -= a[(K - j) * nb + r] * z[r - j];
        z[r] = s;
    }
    for (sap_int r = nb - 1; r >= 0; r--) {
        const sap_int kk = K < nb - 1 - r ? K : nb - 1 - r;
        T s = z[r];
        for (sap_int j = 1; j <= kk; j++) s -= a[(K + j) * nb + r] * z[r + j];
        z[r] = s / a[K * nb + r];
    }
}

static sap_status F(factor)(sap_band_fact *Fa, sap_int *boosted)
{
    sap_context *ctx = Fa->ctx;
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(ctx); /* no fork/join for tiny systems */
    sap_int nboost = 0, nfail = 0;
    const sap_int nwin = Fa->coupled ? L->P : 0;
    /* tasks 0..P-1: LU of partition b; P..P+nwin-1: UL of the window of partition b */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(+ : nboost, nfail)
#endif
    for (sap_int task = 0; task < L->P + nwin; task++) {
        const sap_int b = task < L->P ? task : task - L->P;
        if (task >= L->P && b == 0) continue;
        const sap_int K = L->Ki[b];
        T *work = malloc(sizeof(T) * (size_t)(2 * K + 2));
        if (!work) {
            nfail++;
            continue;
        }
        if (task < L->P)
            nboost += F(lu)((T *)Fa->lu + L->boff[b], L->off[b + 1] - L->off[b], K, (T)Fa->thr[b], (T)Fa->bst[b], work,
                            work + K + 1);
        else
            nboost += F(ul)((T *)Fa->ul + Fa->uoff[b], L->w[b], K, (T)Fa->thr[b], (T)Fa->bst[b], work, work + K + 1);
        free(work);
    }
    (void)nt;
    if (nfail) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "band LU: out of memory for work space");
    *boosted += nboost;
    return SAP_OK;
}

/* Dense column-major m x m helpers (ld = m). */

static sap_status F(spikes)(sap_band_fact *Fa)
{
    sap_context *ctx = Fa->ctx;
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(ctx); /* no fork/join for tiny systems */
    const T *lu = Fa->lu, *Bc = Fa->B, *Cc = Fa->C;
    T *V = Fa->V, *W = Fa->W;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int i = 0; i < L->P - 1; i++) {
        const sap_int m = L->m[i];
        if (m == 0) continue;
        /* V_i^(b) = U_bb^{-1} L_bb^{-1} B_i from the bottom-right m x m of the LU of A_i */
        {
            const sap_int nb = L->off[i + 1] - L->off[i], K = L->Ki[i], s = nb - m;
            const T *a = lu + L->boff[i];
            T *v = V + L->coff[i];
            memcpy(v, Bc + L->coff[i], sizeof(T) * (size_t)(m * m));
            for (sap_int col = 0; col < m; col++) {
                T *x = v + col * m;
                for (sap_int r = 1; r < m; r++) {
                    T acc = x[r];
                    sap_int j0 = r - K > 0 ? r - K : 0;
                    for (sap_int j = j0; j < r; j++) acc -= F(at)(a, nb, K, s + r, s + j) * x[j];
                    x[r] = acc;
                }
                for (sap_int r = m - 1; r >= 0; r--) {
                    T acc = x[r];
                    sap_int j1 = r + K < m - 1 ? r + K : m - 1;
                    for (sap_int j = r + 1; j <= j1; j++) acc -= F(at)(a, nb, K, s + r, s + j) * x[j];
                    x[r] = acc / a[K * nb + s + r];
                }
            }
        }
        /* W_{i+1}^(t) = L_tt^{-1} U_tt^{-1} C_{i+1} from the UL of the leading window of A_{i+1} */
        {
            const sap_int b = i + 1, K = L->Ki[b], w = L->w[b];
            const T *win = (const T *)Fa->ul + Fa->uoff[b];
            T *x0 = W + L->coff[i];
            memcpy(x0, Cc + L->coff[i], sizeof(T) * (size_t)(m * m));
            for (sap_int col = 0; col < m; col++) {
                T *x = x0 + col * m;
                for (sap_int r = m - 2; r >= 0; r--) { /* U_tt unit upper */
                    T acc = x[r];
                    sap_int j1 = r + K < m - 1 ? r + K : m - 1;
                    for (sap_int j = r + 1; j <= j1; j++) acc -= F(at)(win, w, K, r, j) * x[j];
                    x[r] = acc;
                }
                for (sap_int r = 0; r < m; r++) { /* L_tt lower with pivots */
                    T acc = x[r];
                    sap_int j0 = r - K > 0 ? r - K : 0;
                    for (sap_int j = j0; j < r; j++) acc -= F(at)(win, w, K, r, j) * x[j];
                    x[r] = acc / win[K * w + r];
                }
            }
        }
    }
    return SAP_OK;
}

static sap_status F(reduced_factor)(sap_band_fact *Fa)
{
    sap_context *ctx = Fa->ctx;
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(ctx); /* no fork/join for tiny systems */
    sap_int nsing = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(+ : nsing)
#endif
    for (sap_int i = 0; i < L->P - 1; i++) {
        const sap_int m = L->m[i];
        const T *v = (const T *)Fa->V + L->coff[i], *w = (const T *)Fa->W + L->coff[i];
        T *R = (T *)Fa->R + L->coff[i];
        int32_t *piv = Fa->rpiv + Fa->roff[i];
        /* R = I - W V */
        for (sap_int c = 0; c < m; c++) {
            T *rc = R + c * m;
            for (sap_int r = 0; r < m; r++) rc[r] = (T)(r == c);
            for (sap_int k = 0; k < m; k++) {
                const T vk = v[k + c * m];
                if (vk == 0) continue;
                const T *wk = w + k * m;
                for (sap_int r = 0; r < m; r++) rc[r] -= wk[r] * vk;
            }
        }
        /* LU with partial pivoting (right-looking, column-major) */
        for (sap_int k = 0; k < m; k++) {
            sap_int p = k;
            T best = (T)fabs((double)R[k + k * m]);
            for (sap_int r = k + 1; r < m; r++) {
                T a = (T)fabs((double)R[r + k * m]);
                if (a > best) best = a, p = r;
            }
            piv[k] = (int32_t)p;
            if (p != k)
                for (sap_int c = 0; c < m; c++) {
                    T t = R[k + c * m];
                    R[k + c * m] = R[p + c * m];
                    R[p + c * m] = t;
                }
            if (!(best > 0)) {
                nsing++;
                R[k + k * m] = (T)1; /* keep going: the preconditioner stays usable */
            }
            const T inv = (T)1 / R[k + k * m];
            for (sap_int r = k + 1; r < m; r++) R[r + k * m] *= inv;
            for (sap_int c = k + 1; c < m; c++) {
                const T ukc = R[k + c * m];
                if (ukc == 0) continue;
                for (sap_int r = k + 1; r < m; r++) R[r + c * m] -= R[r + k * m] * ukc;
            }
        }
    }
    (void)nt;
    if (nsing) sap__log(ctx, SAP_PRINT_INFO, "band: %lld singular reduced-system pivots set to 1", (long long)nsing);
    return SAP_OK;
}

static sap_status F(block_solve)(sap_band_fact *Fa, const void *rv, void *zv)
{
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(Fa->ctx);
    const T *r = rv;
    T *z = zv;
    const T *lu = Fa->lu;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int b = 0; b < L->P; b++) {
        const sap_int o0 = L->off[b], nb = L->off[b + 1] - o0;
        if (z != r) memcpy(z + o0, r + o0, sizeof(T) * (size_t)nb);
        F(sweep)(lu + L->boff[b], nb, L->Ki[b], z + o0);
    }
    return SAP_OK;
}

static sap_status F(reduced_solve)(sap_band_fact *Fa, const void *gv)
{
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(Fa->ctx);
    const T *g = gv;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int i = 0; i < L->P - 1; i++) {
        const sap_int m = L->m[i], o = L->off[i + 1];
        const T *v = (const T *)Fa->V + L->coff[i], *w = (const T *)Fa->W + L->coff[i];
        const T *R = (const T *)Fa->R + L->coff[i];
        const int32_t *piv = Fa->rpiv + Fa->roff[i];
        T *xb = (T *)Fa->xr + Fa->xoff[i], *xt = xb + m;
        const T *gb = g + o - m, *gt = g + o;
        /* y = gt - W gb */
        for (sap_int r = 0; r < m; r++) xt[r] = gt[r];
        for (sap_int k = 0; k < m; k++) {
            const T gk = gb[k];
            for (sap_int r = 0; r < m; r++) xt[r] -= w[r + k * m] * gk;
        }
        /* R xt = y */
        for (sap_int k = 0; k < m; k++)
            if (piv[k] != k) {
                T t = xt[k];
                xt[k] = xt[piv[k]];
                xt[piv[k]] = t;
            }
        for (sap_int k = 0; k < m; k++) {
            const T xk = xt[k];
            for (sap_int r = k + 1; r < m; r++) xt[r] -= R[r + k * m] * xk;
        }
        for (sap_int k = m - 1; k >= 0; k--) {
            xt[k] /= R[k + k * m];
            const T xk = xt[k];
            for (sap_int r = 0; r < k; r++) xt[r] -= R[r + k * m] * xk;
        }
        /* xb = gb - V xt */
        for (sap_int r = 0; r < m; r++) xb[r] = gb[r];
        for (sap_int k = 0; k < m; k++) {
            const T xk = xt[k];
            for (sap_int r = 0; r < m; r++) xb[r] -= v[r + k * m] * xk;
        }
    }
    return SAP_OK;
}

static sap_status F(purify)(sap_band_fact *Fa, const void *rv, void *fv)
{
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(Fa->ctx);
    const T *r = rv;
    T *f = fv;
    if (f != r) memcpy(f, r, sizeof(T) * (size_t)L->n);
    /* two passes: the bottom rows of partition i (B terms), then the top rows of
     * partition i + 1 (C terms); within a pass every interface writes its own partition */
    for (int pass = 0; pass < 2; pass++) {
        SAP_OMP_FOR_DYNAMIC(nt, 1)
        for (sap_int i = 0; i < L->P - 1; i++) {
            const sap_int m = L->m[i], o = L->off[i + 1];
            const T *M = (const T *)(pass == 0 ? Fa->B : Fa->C) + L->coff[i];
            const T *xb = (const T *)Fa->xr + Fa->xoff[i], *xt = xb + m;
            const T *x = pass == 0 ? xt : xb;
            T *fr = pass == 0 ? f + o - m : f + o;
            for (sap_int k = 0; k < m; k++) {
                const T a = x[k];
                for (sap_int q = 0; q < m; q++) fr[q] -= M[q + k * m] * a;
            }
        }
    }
    return SAP_OK;
}

/* lu (and, coupled, B, C and the UL windows) from a double band source in the BAND
 * layout; norms[b] = ||A_b||_inf computed in double as the host path does. */
static sap_status F(fill_from_band)(sap_band_fact *Fa, const sap_band_source *src, double *norms)
{
    const sap_band_layout *L = &Fa->L;
    const sap_int n = L->n, P = L->P, kl = src->kl, sw = src->w;
    const double *s = src->val;
    T *lu = Fa->lu;
    const int nt = sap__threads(Fa->ctx);
    (void)nt;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int b = 0; b < P; b++) {
        const sap_int o0 = L->off[b], nb = L->off[b + 1] - o0, K = L->Ki[b];
        T *a = lu + L->boff[b];
        for (sap_int t = 0; t <= 2 * K; t++) {
            const sap_int q = t - K + kl; /* diagonal j - i = t - K in the source */
            const int have = q >= 0 && q < sw;
            for (sap_int r = 0; r < nb; r++) {
                const sap_int c = r + t - K;
                a[t * nb + r] = (have && c >= 0 && c < nb) ? (T)s[(size_t)q * n + o0 + r] : (T)0;
            }
        }
        double nrm = 0;
        for (sap_int r = 0; r < nb; r++) {
            double sum = 0;
            for (sap_int t = 0; t <= 2 * K; t++) {
                const sap_int q = t - K + kl, c = r + t - K;
                if (q >= 0 && q < sw && c >= 0 && c < nb) sum += fabs(s[(size_t)q * n + o0 + r]);
            }
            if (sum > nrm) nrm = sum;
        }
        norms[b] = nrm;
    }
    if (!Fa->coupled) return SAP_OK;
    T *B = Fa->B, *C = Fa->C, *ul = Fa->ul;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int i = 0; i < P - 1; i++) {
        /* B_i(a, c) = A(o1 - m + a, o1 + c), C_{i+1}(a, c) = A(o1 + a, o1 - m + c), entries with
         * |j - i| <= K only */
        const sap_int m = L->m[i], o1 = L->off[i + 1];
        for (sap_int c = 0; c < m; c++)
            for (sap_int a = 0; a < m; a++) {
                const sap_int db = c + m - a, qb = db + kl, rb = o1 - m + a;
                B[L->coff[i] + a + c * m] = (db <= L->K && qb < sw) ? (T)s[(size_t)qb * n + rb] : (T)0;
                const sap_int dc = -(a + m - c), qc = dc + kl, rc = o1 + a;
                C[L->coff[i] + a + c * m] = (-dc <= L->K && qc >= 0) ? (T)s[(size_t)qc * n + rc] : (T)0;
            }
    }
    SAP_OMP_FOR_DYNAMIC(nt, 4)
    for (sap_int b = 1; b < P; b++) {
        const sap_int nb = L->off[b + 1] - L->off[b], K = L->Ki[b], w = L->w[b];
        const T *sb = lu + L->boff[b];
        T *dst = ul + Fa->uoff[b];
        for (sap_int t = 0; t <= 2 * K; t++)
            for (sap_int r = 0; r < w; r++) {
                const sap_int c = r + t - K;
                dst[t * w + r] = (c >= 0 && c < w) ? sb[t * nb + r] : (T)0;
            }
    }
    return SAP_OK;
}
