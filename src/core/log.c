/* log.c - TP_LOGS: comma-separated categories ("captures", "recompiles",
 * "fallbacks", "all"), read once from the environment (Node passes it to
 * the Wasm core through WASI environ). Lines go to stderr as
 * "[tensorplay:CATEGORY] message". TP_LOG_RECOMPILES=1 is an alias for
 * the recompiles category. */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>

static int mask = -1;

static int parse_mask(void) {
  static const char *const names[TP_LOG_COUNT] = {"captures", "recompiles", "fallbacks"};
  int m = 0;
  const char *env = getenv("TP_LOGS");
  for (const char *p = env; p && *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if ((n == 3 && !strncmp(p, "all", 3)) || (n == 1 && *p == '1')) m = (1 << TP_LOG_COUNT) - 1;
    for (int i = 0; i < TP_LOG_COUNT; i++)
      if (strlen(names[i]) == n && !strncmp(p, names[i], n)) m |= 1 << i;
    p = e ? e + 1 : p + n;
  }
  const char *r = getenv("TP_LOG_RECOMPILES");
  if (r && *r && strcmp(r, "0")) m |= 1 << TP_LOG_RECOMPILES;
  return m;
}

int tp_log_enabled(tp_log_category c) {
  if (mask < 0) mask = parse_mask();
  return (mask >> c) & 1;
}

void tp_log(tp_log_category c, const char *fmt, ...) {
  static const char *const names[TP_LOG_COUNT] = {"captures", "recompiles", "fallbacks"};
  if (!tp_log_enabled(c)) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[tensorplay:%s] %s\n", names[c], msg);
  fflush(stderr);
}
