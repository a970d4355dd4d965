/* check.h - the failure reporting the C tests share: every failure prints
 * "FAIL file:line: message" and counts in `failures` (each test's main
 * returns non-zero when it is not 0; a test that runs cases in forked
 * children resets it in the child and adds the child's exit status).
 *
 *   CHECK(cond)              cond holds; else prints it and tp_last_error()
 *   CHECK_OK(call)           the call returns TP_OK; else prints its status
 *   CHECKF(cond, fmt, ...)   cond holds; else prints the printf-style message
 *   FAILF(fmt, ...)          an unconditional failure, printf-style
 *   FAILF_AT(line, fmt, ...) the same at a given line of the test file: for
 *                            helpers that macros pass their caller's __LINE__
 *
 * `checks` counts the conditions CHECK, CHECK_OK and CHECKF evaluated (a
 * test may add its own). A test with very many comparisons sets
 * `check_print_limit`: failures past it are counted, not printed. */
#ifndef TP_TESTS_CHECK_H
#define TP_TESTS_CHECK_H
#include <stdarg.h>
#include <stdio.h>
#include "tensorplay.h"

static int failures __attribute__((unused));
static int checks __attribute__((unused));
static int check_print_limit __attribute__((unused)); /* 0: print every failure */

/* The one place a failure is counted and printed; file and line are the
 * test's (the macros below pass __FILE__ and the line). */
__attribute__((format(printf, 3, 4), unused))
static void check_failf_at(const char *file, int line, const char *fmt, ...) {
  failures++;
  if (check_print_limit > 0 && failures > check_print_limit) {
    if (failures == check_print_limit + 1) printf("... (further failures not printed)\n");
    return;
  }
  va_list ap;
  printf("FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

#define FAILF(...) check_failf_at(__FILE__, __LINE__, __VA_ARGS__)
#define FAILF_AT(line, ...) check_failf_at(__FILE__, (line), __VA_ARGS__)
#define CHECKF(c, ...)            \
  do {                            \
    checks++;                     \
    if (!(c)) FAILF(__VA_ARGS__); \
  } while (0)
#define CHECK(c)                                                 \
  do {                                                           \
    checks++;                                                    \
    if (!(c)) FAILF("%s (last error: %s)", #c, tp_last_error()); \
  } while (0)
/* CHECK_OK(call): the call returns TP_OK; otherwise print its status. */
#define CHECK_OK(e)                                                        \
  do {                                                                     \
    tp_status s_ = (e);                                                    \
    checks++;                                                              \
    if (s_ != TP_OK)                                                       \
      FAILF("%s failed: %s: %s", #e, tp_status_name(s_), tp_last_error()); \
  } while (0)

#endif
