/* rng.c -- deterministic pseudo-random numbers (splitmix64 + xoshiro256**). */
#include "base/base.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void sap__rng_seed(sap_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sap__rng_next(sap_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sap__rng_uniform(sap_rng *r) { return (double)(sap__rng_next(r) >> 11) * 0x1.0p-53; }

uint64_t sap__rng_below(sap_rng *r, uint64_t n)
{
    if (n <= 1) return 0;
    /* Lemire's nearly-divisionless method with rejection for exact uniformity. */
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = sap__rng_next(r);
        __uint128_t m = (__uint128_t)x * n;
        if ((uint64_t)m >= threshold) return (uint64_t)(m >> 64);
    }
}

void sap__rng_permutation(sap_rng *r, sap_int n, sap_int *p)
{
    for (sap_int i = 0; i < n; i++) p[i] = i;
    for (sap_int i = n - 1; i > 0; i--) {
        sap_int j = (sap_int)sap__rng_below(r, (uint64_t)i + 1);
        sap_int t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}
