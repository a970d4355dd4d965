/* check.h - the CHECK macro the C tests share: on failure, print the
 * condition, where it is and the core's last error, and count it in
 * `failures` (each test's main returns non-zero when it is not 0). */
#ifndef TP_TESTS_CHECK_H
#define TP_TESTS_CHECK_H
#include <stdio.h>
#include "tensorplay.h"

static int failures;
#define CHECK(c)                                                                            \
  do {                                                                                      \
    if (!(c)) {                                                                             \
      printf("FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, tp_last_error()); \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)

#endif
