/* Beam search's step over the vocabulary (nmtvariants/inference/vocab_topk.py): the log-sum-exp of
   each row of logits and its r largest entries, read in place, without writing a [rows, V]
   log-softmax. Built by nmtvariants.native for the host's instruction set (-march=native). */
#include <math.h>
#include <stdint.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

/* glibc's vector exp (libmvec): the sum of exponentials below is vectorised without -ffast-math,
   which would also switch off IEEE infinities that the masks rely on. */
__attribute__((simd("notinbranch"))) float expf(float);

static inline int is_banned(int64_t j, const int64_t *banned, int64_t n_banned) {
    for (int64_t b = 0; b < n_banned; ++b)
        if (banned[b] == j) return 1;
    return 0;
}

/* Keep x[j] among the r best so far (val descending; equal values keep the lower j first). */
static inline void consider(float *val, int64_t *idx, int64_t *filled, int64_t r, float *thresh,
                            const int64_t *banned, int64_t n_banned, float xv, int64_t j) {
    if ((*filled == r && !(xv > *thresh)) || is_banned(j, banned, n_banned)) return;
    int64_t p = *filled < r ? (*filled)++ : r - 1;
    while (p > 0 && val[p - 1] < xv) {
        val[p] = val[p - 1];
        idx[p] = idx[p - 1];
        --p;
    }
    val[p] = xv;
    idx[p] = j;
    if (*filled == r) *thresh = val[r - 1];
}

#if defined(__AVX512F__)
#define LANES 16
static inline uint32_t over(const float *x, float thresh) {
    return _mm512_cmp_ps_mask(_mm512_loadu_ps(x), _mm512_set1_ps(thresh), _CMP_GT_OQ);
}
#elif defined(__AVX2__)
#define LANES 8
static inline uint32_t over(const float *x, float thresh) {
    return (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x), _mm256_set1_ps(thresh), _CMP_GT_OQ));
}
#else
#define LANES 8
static inline uint32_t over(const float *x, float thresh) {
    uint32_t mask = 0;
    for (int j = 0; j < LANES; ++j) mask |= (uint32_t)(x[j] > thresh) << j;
    return mask;
}
#endif

/* For each row i of x [n, v]: lse[i] = log(sum_j exp(x[i, j])) over every j, and the r largest
   x[i, j] over the j not in banned, best first, in values[i, :] and index[i, :] (-inf and 0 where
   a row has fewer than r such entries). */
void top_log_probs(const float *x, int64_t n, int64_t v, int64_t r, const int64_t *banned,
                   int64_t n_banned, float *values, int64_t *index, float *lse) {
    for (int64_t i = 0; i < n; ++i) {
        const float *row = x + i * v;
        float *val = values + i * r;
        int64_t *idx = index + i * r;
        int64_t filled = 0, j = 0;
        float thresh = -INFINITY;
        for (; j < v && filled < r; ++j) consider(val, idx, &filled, r, &thresh, banned, n_banned, row[j], j);
        for (; j + LANES <= v; j += LANES) {
            for (uint32_t mask = over(row + j, thresh); mask; mask &= mask - 1) {
                int64_t at = j + __builtin_ctz(mask);
                consider(val, idx, &filled, r, &thresh, banned, n_banned, row[at], at);
            }
        }
        for (; j < v; ++j) consider(val, idx, &filled, r, &thresh, banned, n_banned, row[j], j);
        float m = filled ? val[0] : -INFINITY;
        for (int64_t b = 0; b < n_banned; ++b)
            if (banned[b] >= 0 && banned[b] < v && row[banned[b]] > m) m = row[banned[b]];
        if (m == -INFINITY || m == INFINITY || m != m) {
            lse[i] = m;  /* every entry -inf, or an inf / nan row: nothing to normalise */
        } else {
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (int64_t k = 0; k < v; ++k) s += expf(row[k] - m);
            lse[i] = m + logf(s);
        }
        for (int64_t p = filled; p < r; ++p) {
            val[p] = -INFINITY;
            idx[p] = 0;
        }
    }
}
