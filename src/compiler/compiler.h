/* compiler.h - the frontend's internal API (the public declarations of
 * config values, the backend registry and modes live in tensorplay.h). compile.c (and records.c) build on it; wasm/compile.c
 * exposes it to JS. Errors follow the seed: TP_ERR_TYPE for Python's
 * TypeError, TP_ERR_VALUE for ValueError, TP_ERR_RUNTIME for RuntimeError,
 * TP_ERR_ASSERTION for AssertionError, TP_ERR_INVALID_BACKEND for
 * InvalidBackend; messages are the seed's, word for word. */
#ifndef TP_COMPILER_H
#define TP_COMPILER_H
#include "../capture/capture.h"

/* The public part (values, config, backends, modes) is in tensorplay.h. */

/* compile()'s config checks in the seed's order, then recompile_limit
 * (given: the argument; else config.recompile_limit). */
tp_status tp_compile_check_config(int recompile_limit_given, int recompile_limit);
#endif
