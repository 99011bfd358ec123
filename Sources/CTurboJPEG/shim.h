#include <turbojpeg.h>

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The first offset k in [from, n - 1) where p[k] is 0xFF and p[k + 1] is not 0x00, or n when there is
 * none. Inside JPEG entropy-coded data, 0xFF followed by 0x00 is a stuffed data byte; anything else
 * after 0xFF starts a marker (a restart marker, fill bytes or the end of the scan). Sixteen bytes at
 * a time with SSE2 (every x86-64), byte by byte elsewhere. */
static inline size_t lg_jpeg_next_marker_candidate(const uint8_t *p, size_t from, size_t n) {
    size_t k = from;
#if defined(__SSE2__)
    const __m128i ff = _mm_set1_epi8((char)0xFF);
    const __m128i zero = _mm_setzero_si128();
    while (k + 17 <= n) {
        __m128i here = _mm_loadu_si128((const __m128i *)(const void *)(p + k));
        __m128i next = _mm_loadu_si128((const __m128i *)(const void *)(p + k + 1));
        int m = _mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(next, zero), _mm_cmpeq_epi8(here, ff)));
        if (m) return k + (size_t)__builtin_ctz((unsigned)m);
        k += 16;
    }
#endif
    for (; k + 1 < n; k++) {
        if (p[k] == 0xFF && p[k + 1] != 0) return k;
    }
    return n;
}
