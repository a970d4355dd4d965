/* test_qgemm_jit.c - the relaxed-SIMD integer GEMM tile module
 * (src/codegen/wasm/emit_qgemm.c): its bytes are a module that wabt's
 * wasm-validate accepts with relaxed SIMD and refuses without it (why it
 * cannot live in the core module), that imports env.memory and exports f0
 * with the tile's signature; natively tp_qgemm_jit_install installs
 * nothing. Its results are checked where it runs: tests/js/qgemm_wasm.test.js
 * (Node with relaxed SIMD, bit for bit against the scalar variant). */
#include "codegen/qgemm_jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "runtime/qgemm.h"

static int have_tool(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

static int contains(const uint8_t *p, size_t n, const void *needle, size_t k) {
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp(p + i, needle, k)) return 1;
  return 0;
}

int main(void) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  CHECK_OK(tp_qgemm_jit_emit(&bytes, &len));
  CHECKF(bytes && len > 8 && !memcmp(bytes, "\0asm\1\0\0\0", 8), "not a Wasm module (%zu bytes)", len);
  static const uint8_t dot[3] = {0xfd, 0x93, 0x02}; /* 0xfd 0x113 */
  CHECKF(contains(bytes, len, dot, 3), "no i32x4.relaxed_dot_i8x16_i7x16_add_s in the module");
  CHECKF(contains(bytes, len, "memory", 6) && contains(bytes, len, "f0", 2), "imports/exports");
  printf("qgemm relaxed module: %zu bytes\n", len);
  if (have_tool("wasm-validate") && have_tool("wasm2wat")) {
    char path[] = "/tmp/tp-qgemm-jit-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
      CHECK(write(fd, bytes, len) == (ssize_t)len);
      close(fd);
      char cmd[512];
      snprintf(cmd, sizeof cmd, "wasm-validate --enable-relaxed-simd %s", path);
      CHECKF(system(cmd) == 0, "wasm-validate --enable-relaxed-simd refused the module");
      snprintf(cmd, sizeof cmd, "wasm-validate %s 2>/dev/null", path);
      CHECKF(system(cmd) != 0, "the module validates without relaxed SIMD");
      snprintf(cmd, sizeof cmd,
               "wasm2wat --enable-relaxed-simd %s | grep -q "
               "'(func (;0;) (type 0) (param i64 i32 i32 i32)'",
               path);
      CHECKF(system(cmd) == 0, "f0 does not have the tile's signature (i64 i32 i32 i32)");
      unlink(path);
    }
  } else {
    printf("wabt (wasm-validate, wasm2wat) not installed: validation skipped\n");
  }
  free(bytes);
  /* natively: nothing to install, and the variants stay as they were */
  int n0 = tp_qgemm_variant_count(), installed = 1;
  CHECK_OK(tp_qgemm_jit_install(&installed));
  CHECKF(!installed && tp_qgemm_variant_count() == n0, "installed a relaxed kernel natively");
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
