/* The two element-wise passes around an int8 matrix product (nmtvariants/inference/int8_linear.py):
   quantising each input row to int8 with its own scale, and rescaling the int32 products to float32
   with the bias added. Built by nmtvariants.native for the host's instruction set (-march=native);
   -ffp-contract=off keeps every multiply and add rounded on its own, as PyTorch's operators do, so
   that this path and the PyTorch one give the same bits. */
#include <math.h>
#include <stdint.h>

#define ROUNDER 12582912.0f

/* Row i of x [m, k]: scales[i] = max_j |x[i, j]| / 127 (1 for a row of zeros) and
   q[i, j] = round-half-even(x[i, j] * (1 / scales[i])). That lies in [-127, 127] without a clamp:
   |x| * (1 / scale) <= 127 * (1 + 4 float32 roundings) < 127.5. The maximum is a comparison, not
   fmaxf: GCC vectorises the one, not the other (its NaN rules); NaN is not an input here. */
void quantize_rows(const float *x, int64_t m, int64_t k, int8_t *q, float *scales) {
    for (int64_t i = 0; i < m; ++i) {
        const float *row = x + i * k;
        int8_t *out = q + i * k;
        float amax = 0.0f;
#pragma omp simd reduction(max : amax)
        for (int64_t j = 0; j < k; ++j) {
            const float magnitude = fabsf(row[j]);
            amax = magnitude > amax ? magnitude : amax;
        }
        const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
        const float inverse = 1.0f / scale;
        scales[i] = scale;
#pragma omp simd
        for (int64_t j = 0; j < k; ++j) {
            /* adding and subtracting 1.5 * 2^23 rounds a value under 2^22 in magnitude to the
               nearest integer, ties to even, as rintf would (which GCC does not vectorise) */
            out[j] = (int8_t)(int32_t)((row[j] * inverse + ROUNDER) - ROUNDER);
        }
    }
}

/* out[i, j] = acc[i, j] * row_scales[i] * col_scales[j] (+ bias[j] when bias is not NULL), in that
   order of rounding; out may be acc itself (a float32 written over the int32 it came from). */
void dequantize_rows(const int32_t *acc, int64_t m, int64_t n, const float *row_scales,
                     const float *col_scales, const float *bias, float *out) {
    for (int64_t i = 0; i < m; ++i) {
        const int32_t *in = acc + i * n;
        float *row = out + i * n;
        const float rs = row_scales[i];
        if (bias) {
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) row[j] = (float)in[j] * rs * col_scales[j] + bias[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) row[j] = (float)in[j] * rs * col_scales[j];
        }
    }
}
