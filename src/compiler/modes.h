/* modes.h - the table of stax option keys behind compile(mode=...,
 * options=...), for docs and for the lowering pipeline. The mode API itself
 * (tp_list_mode_options, tp_check_mode_options) is declared in tensorplay.h. */
#ifndef TP_MODES_H
#define TP_MODES_H
#include "compiler.h"

/* Row i of the option table: returns its meaning and sets *key (borrowed,
 * static) to the option key; NULL (and *key NULL) past the end. Rows are in
 * table order, which is not sorted. key may be NULL. */
const char *tp_mode_option_doc(int i, const char **key);

/* The option patch of a mode: up to max keys into keys_out (static strings;
 * every value of a mode patch is true), the count into *n_out. Unknown mode:
 * the TP_ERR_RUNTIME "Unrecognized mode=..." error of tp_list_mode_options.
 * mode NULL is "default" (an empty patch). */
tp_status tp_mode_patch(const char *mode, int max, const char **keys_out, int *n_out);
#endif
