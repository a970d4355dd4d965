/* b64.h - base64 of raw bytes for the C tests that write graph text with
 * constant data (docs/graph-format.md: `data=<base64>`), shared so the
 * encoder is written once. out holds 4 * ((n + 2) / 3) + 1 chars. */
#ifndef TP_TESTS_B64_H
#define TP_TESTS_B64_H
#include <stddef.h>
#include <stdint.h>

static inline void b64(const uint8_t *p, size_t n, char *out) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out[o++] = tab[v >> 18 & 63], out[o++] = tab[v >> 12 & 63];
    out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? tab[v & 63] : '=';
  }
  out[o] = 0;
}
#endif
