/* fuzz_diff.c - libFuzzer target of the differential tests: the bytes
 * become a random valid graph (tests/c/diffgen.c: ops, operands, shapes,
 * dtypes and attributes drawn from the op table), run by the reference,
 * eager and stax backends with every input fed at run time; a disagreement
 * beyond diffgen.h's tolerances, or a backend failing where the reference
 * ran, aborts with the graph's text. The ctest driver
 * tests/c/compiler/test_diff.c runs fixed seeds of the same generator.
 * Built and run by tests/fuzz/run.sh. */
#include "../c/diffgen.h"
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dg_case c;
  if (dg_build(data, size, &c) != TP_OK) {
    tp_clear_error();
    return 0;
  }
  char why[600];
  if (dg_check(&c, why, sizeof why) > 0) {
    char *text = NULL;
    fprintf(stderr, "backends disagree: %s\n", why);
    if (tp_graph_print(c.g, 1, &text) == TP_OK) fprintf(stderr, "%s", text);
    tp_free_buffer(text);
    dg_dump(&c);
    abort();
  }
  dg_free(&c);
  tp_clear_error();
  return 0;
}
