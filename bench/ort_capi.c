/* ort_capi.c - onnxruntime through its C API, loaded with dlopen() from the
 * libonnxruntime.so.1 of the onnxruntime-node package (declarations and
 * the version check: ort_capi.h). Used by bench/models_bench.c. */
#define _GNU_SOURCE
#include "ort_capi.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const OrtApi *api;
static OrtEnv *env;
static OrtMemoryInfo *cpu_info;
static const char *lib_version = "";
static char last_err[512];

const char *ort_version(void) { return lib_version; }
const char *ort_last_error(void) { return last_err; }

static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_err, sizeof last_err, fmt, ap);
  va_end(ap);
  return -1;
}

/* A failed OrtStatus becomes last_err (and is released); 0 when s is NULL. */
static int check(OrtStatus *s, const char *what) {
  if (!s) return 0;
  fail("onnxruntime %s: %s", what, api->GetErrorMessage(s));
  api->ReleaseStatus(s);
  return -1;
}

static int copy_err(char *err, size_t errlen, int rc) {
  if (rc && err && errlen) snprintf(err, errlen, "%s", last_err);
  return rc;
}

int ort_load(const char *path, char *err, size_t errlen) {
  if (api) return 0;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return copy_err(err, errlen, fail("cannot load %s: %s", path, dlerror()));
  const OrtApiBase *(*get_base)(void) = (const OrtApiBase *(*)(void))dlsym(h, "OrtGetApiBase");
  const OrtApiBase *base = get_base ? get_base() : NULL;
  if (!base) return copy_err(err, errlen, fail("%s has no OrtGetApiBase", path));
  const char *v = base->GetVersionString();
  if (!v || strcmp(v, ORT_CAPI_VERSION) != 0)
    return copy_err(err, errlen,
                    fail("%s is onnxruntime %s, but bench/ort_capi.h declares the OrtApi table of %s "
                         "(check the slot order against that version's onnxruntime_c_api.h, then update "
                         "ORT_CAPI_VERSION / ORT_CAPI_API_VERSION)",
                         path, v ? v : "(no version)", ORT_CAPI_VERSION));
  api = base->GetApi(ORT_CAPI_API_VERSION);
  if (!api) return copy_err(err, errlen, fail("onnxruntime %s: GetApi(%u) returned NULL", v, ORT_CAPI_API_VERSION));
  lib_version = v;
  if (check(api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "tensorplay-bench", &env), "CreateEnv") ||
      check(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &cpu_info), "CreateCpuMemoryInfo")) {
    api = NULL;
    return copy_err(err, errlen, -1);
  }
  return 0;
}

static char *dup_name(OrtAllocator *al, char *s) {
  char *c = strdup(s);
  OrtStatus *st = api->AllocatorFree(al, s);
  if (st) api->ReleaseStatus(st);
  return c;
}

static int intra_threads = 1;

int ort_set_threads(int n) {
  if (n < 1 || n > 64) return fail("intra-op thread count %d is out of range (1..64)", n);
  intra_threads = n;
  return 0;
}

int ort_model_open(ort_model *m, const char *onnx_path, const float *x, int ndim, const int64_t *shape,
                   char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  if (!api) return copy_err(err, errlen, fail("onnxruntime is not loaded"));
  if (ndim < 0 || ndim > 8) return copy_err(err, errlen, fail("input rank %d is out of range", ndim));
  OrtSessionOptions *so = NULL;
  int rc = check(api->CreateSessionOptions(&so), "CreateSessionOptions") ||
           check(api->SetIntraOpNumThreads(so, intra_threads), "SetIntraOpNumThreads") ||
           check(api->SetInterOpNumThreads(so, 1), "SetInterOpNumThreads") ||
           check(api->SetSessionExecutionMode(so, ORT_SEQUENTIAL), "SetSessionExecutionMode") ||
           check(api->SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL), "SetSessionGraphOptimizationLevel") ||
           check(api->CreateSession(env, onnx_path, so, &m->sess), "CreateSession");
  if (so) api->ReleaseSessionOptions(so);
  if (rc) return copy_err(err, errlen, -1);
  size_t nin = 0, nout = 0;
  OrtAllocator *al = NULL;
  char *iname = NULL, *oname = NULL;
  if (check(api->SessionGetInputCount(m->sess, &nin), "SessionGetInputCount") ||
      check(api->SessionGetOutputCount(m->sess, &nout), "SessionGetOutputCount") ||
      check(api->GetAllocatorWithDefaultOptions(&al), "GetAllocatorWithDefaultOptions")) {
    ort_model_close(m);
    return copy_err(err, errlen, -1);
  }
  if (nin != 1 || nout < 1) {
    ort_model_close(m);
    return copy_err(err, errlen, fail("%s: want 1 input and at least 1 output, has %zu and %zu", onnx_path, nin, nout));
  }
  if (check(api->SessionGetInputName(m->sess, 0, al, &iname), "SessionGetInputName") ||
      check(api->SessionGetOutputName(m->sess, 0, al, &oname), "SessionGetOutputName")) {
    ort_model_close(m);
    return copy_err(err, errlen, -1);
  }
  m->in_name = dup_name(al, iname);
  m->out_name = dup_name(al, oname);
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) n *= shape[k], m->xshape[k] = shape[k];
  m->xndim = ndim;
  m->xbytes = (size_t)n * sizeof(float);
  m->xbuf = aligned_alloc(64, (m->xbytes + 63) / 64 * 64);
  if (!m->xbuf) {
    ort_model_close(m);
    return copy_err(err, errlen, fail("out of memory (%zu bytes)", m->xbytes));
  }
  memcpy(m->xbuf, x, m->xbytes);
  if (check(api->CreateTensorWithDataAsOrtValue(cpu_info, m->xbuf, m->xbytes, m->xshape, (size_t)ndim,
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &m->x),
            "CreateTensorWithDataAsOrtValue")) {
    ort_model_close(m);
    return copy_err(err, errlen, -1);
  }
  return 0;
}

static int run(ort_model *m, OrtValue **y) {
  const char *in[1] = {m->in_name}, *out[1] = {m->out_name};
  const OrtValue *xs[1] = {m->x};
  *y = NULL;
  return check(api->Run(m->sess, NULL, in, xs, 1, out, 1, y), "Run");
}

static int64_t numel_of(OrtValue *y) {
  OrtTensorTypeAndShapeInfo *ti = NULL;
  size_t n = 0;
  int et = 0;
  if (check(api->GetTensorTypeAndShape(y, &ti), "GetTensorTypeAndShape")) return -1;
  int rc = check(api->GetTensorShapeElementCount(ti, &n), "GetTensorShapeElementCount") ||
           check(api->GetTensorElementType(ti, &et), "GetTensorElementType");
  api->ReleaseTensorTypeAndShapeInfo(ti);
  if (rc) return -1;
  if (et != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) return fail("output 0 is not float32 (type %d)", et);
  return (int64_t)n;
}

int ort_run_resident(ort_model *m) {
  OrtValue *y = NULL;
  if (run(m, &y)) return -1;
  api->ReleaseValue(y);
  return 0;
}

int ort_run_e2e(ort_model *m, const float *src, float *dst, size_t dst_bytes) {
  memcpy(m->xbuf, src, m->xbytes); /* copy in: the user's array into ORT's input */
  OrtValue *y = NULL;
  if (run(m, &y)) return -1;
  void *p = NULL;
  int rc = check(api->GetTensorMutableData(y, &p), "GetTensorMutableData");
  if (!rc) memcpy(dst, p, dst_bytes); /* read out into the reused buffer */
  api->ReleaseValue(y);
  return rc;
}

int64_t ort_out_numel(ort_model *m) {
  OrtValue *y = NULL;
  if (run(m, &y)) return -1;
  int64_t n = numel_of(y);
  api->ReleaseValue(y);
  return n;
}

void ort_model_close(ort_model *m) {
  if (!api) return;
  if (m->x) api->ReleaseValue(m->x);
  if (m->sess) api->ReleaseSession(m->sess);
  free(m->xbuf);
  free(m->in_name);
  free(m->out_name);
  memset(m, 0, sizeof *m);
}
