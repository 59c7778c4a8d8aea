/* One decoding step's self-attention over the beam cache of models/decoder_cache.py, scoring each
   hypothesis only against its own ancestors' keys (models/beam_attention.py says why). Built by
   nmtvariants.native for the host's instruction set (-march=native). */
#include <math.h>
#include <stdint.h>

/* glibc's vector exp (libmvec), as in vocab_topk.c: the softmax's loop is vectorised without
   -ffast-math. */
__attribute__((simd("notinbranch"))) float expf(float);

/* For sentence s, beam slot r, head h (row = s * g + r):
     key/value of position p = k/v[s, h, p * g + slots[s, r, p], :]
     w = softmax_p((q[row, h, :] * scale) . key_p)
     out[row, h, :] = sum_p w_p * value_p
   q and out: [S * g, H, d]; k and v: [S, H, kv_len, d] (kv_len >= n * g); slots: [S, g, slot_len]
   (slot_len >= n); scratch: n + d floats. */
void beam_attend(const float *q, const float *k, const float *v, const int64_t *slots, int64_t sentences,
                 int64_t g, int64_t heads, int64_t d, int64_t n, int64_t kv_len, int64_t slot_len,
                 float scale, float *out, float *scratch) {
    for (int64_t s = 0; s < sentences; ++s) {
        for (int64_t h = 0; h < heads; ++h) {
            const float *keys = k + (s * heads + h) * kv_len * d;
            const float *values = v + (s * heads + h) * kv_len * d;
            for (int64_t r = 0; r < g; ++r) {
                const int64_t row = s * g + r;
                float *scores = scratch, *query = scratch + n;
#pragma omp simd
                for (int64_t j = 0; j < d; ++j) query[j] = q[(row * heads + h) * d + j] * scale;
                const int64_t *slot = slots + row * slot_len;
                float *result = out + (row * heads + h) * d;
                float top = -INFINITY;
                for (int64_t p = 0; p < n; ++p) {
                    const float *key = keys + (p * g + slot[p]) * d;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int64_t j = 0; j < d; ++j) dot += query[j] * key[j];
                    scores[p] = dot;
                    top = dot > top ? dot : top;
                }
                float total = 0.0f;
#pragma omp simd reduction(+ : total)
                for (int64_t p = 0; p < n; ++p) {
                    scores[p] = expf(scores[p] - top);
                    total += scores[p];
                }
                const float inverse = 1.0f / total;
#pragma omp simd
                for (int64_t j = 0; j < d; ++j) result[j] = 0.0f;
                for (int64_t p = 0; p < n; ++p) {
                    const float *value = values + (p * g + slot[p]) * d;
                    const float weight = scores[p] * inverse;
#pragma omp simd
                    for (int64_t j = 0; j < d; ++j) result[j] += weight * value[j];
                }
            }
        }
    }
}
