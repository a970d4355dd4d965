/* status.c - status names, the per-thread last error, the abort hook. */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>

static TP_THREAD_LOCAL char last_msg[1024];
static TP_THREAD_LOCAL tp_status last_status;
static tp_abort_fn abort_hook;

static const char *const status_names[TP_STATUS_COUNT] = {
    "ok", "invalid argument", "unsupported", "out of memory", "capture error",
    "parse error", "i/o error", "disposed", "host error", "internal error",
    "type error", "value error", "runtime error", "assertion error", "invalid backend"};

const char *tp_status_name(tp_status s) {
  return (unsigned)s < TP_STATUS_COUNT ? status_names[s] : "unknown status";
}

const char *tp_last_error(void) { return last_msg; }
tp_status tp_last_status(void) { return last_status; }
void tp_clear_error(void) {
  last_msg[0] = 0;
  last_status = TP_OK;
}

tp_status tp_fail(tp_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  va_end(ap);
  last_status = s;
  return s;
}

tp_status tp_fail_context(tp_status s, const char *fmt, ...) {
  char prefix[256], old[sizeof last_msg];
  size_t room;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, last_msg, sizeof old);
  room = strlen(prefix);
  if (room > sizeof last_msg - 3) room = sizeof last_msg - 3;
  memcpy(last_msg, prefix, room);
  memcpy(last_msg + room, ": ", 2);
  size_t rest = sizeof last_msg - room - 3;
  size_t ol = strlen(old);
  if (ol > rest) ol = rest;
  memcpy(last_msg + room + 2, old, ol);
  last_msg[room + 2 + ol] = 0;
  last_status = s;
  return s;
}

void tp_set_abort_hook(tp_abort_fn fn) { abort_hook = fn; }

void tp_assert_fail(const char *file, int line, const char *expr) {
  char msg[512];
  snprintf(msg, sizeof msg, "tensorplay internal error: %s:%d: assertion '%s' failed", file,
           line, expr);
  if (abort_hook) abort_hook(msg);
  fprintf(stderr, "%s\n", msg);
  abort();
}
