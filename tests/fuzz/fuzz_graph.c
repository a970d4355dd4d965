/* fuzz_graph.c - libFuzzer target for the graph text parser: any bytes must
 * give a graph or an error status, never a crash, a leak or undefined
 * behaviour; and a graph that parses must round-trip: its printed text
 * (with data) parses again and prints the same text; and exporting it to
 * ONNX (tp_onnx_save: any status) gives bytes that load again or a clear
 * error, never a crash. Built and run by
 * tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined). */
#include "tensorplay.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp_graph *g = NULL, *g2 = NULL;
  char *t1 = NULL, *t2 = NULL;
  if (tp_graph_parse((const char *)data, size, &g) != TP_OK) return 0;
  if (tp_graph_print(g, 1, &t1) != TP_OK) { /* out of memory is the only allowed failure */
    if (tp_last_status() != TP_ERR_OUT_OF_MEMORY) {
      fprintf(stderr, "print failed on a parsed graph: %s\n", tp_last_error());
      abort();
    }
    tp_graph_free(g);
    return 0;
  }
  if (tp_graph_parse(t1, strlen(t1), &g2) != TP_OK) {
    fprintf(stderr, "the printed graph does not parse: %s\n---\n%s---\n", tp_last_error(), t1);
    abort();
  }
  if (tp_graph_print(g2, 1, &t2) != TP_OK || strcmp(t1, t2)) {
    fprintf(stderr, "print(parse(print(g))) differs:\n---\n%s---\n%s---\n", t1, t2 ? t2 : "(print failed)");
    abort();
  }
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (tp_onnx_save(g, &bytes, &len) == TP_OK) {
    tp_graph *g3 = NULL;
    if (tp_onnx_load(bytes, len, &g3) == TP_OK) tp_graph_free(g3);
    tp_free_buffer(bytes);
  }
  tp_free_buffer(t1);
  tp_free_buffer(t2);
  tp_graph_free(g);
  tp_graph_free(g2);
  return 0;
}
