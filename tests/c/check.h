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
/* CHECK_OK(call): the call returns TP_OK; otherwise print its status. */
#define CHECK_OK(e)                                                                 \
  do {                                                                              \
    tp_status s_ = (e);                                                             \
    if (s_ != TP_OK) {                                                              \
      printf("FAIL %s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #e,            \
             tp_status_name(s_), tp_last_error());                                  \
      failures++;                                                                   \
    }                                                                               \
  } while (0)

#endif
