/* ort_capi.h - onnxruntime's C API, timed natively by the benchmarks
 * (bench/models_bench.c): the library is the libonnxruntime.so.1 that ships
 * in the onnxruntime-node npm package (node_modules/onnxruntime-node/bin/...),
 * loaded with dlopen(); nothing is linked at build time.
 *
 * onnxruntime's header is not in that package, so this file declares what
 * the benchmark uses, written from the facts of onnxruntime_c_api.h: OrtApi
 * is a table of function pointers that only ever grows at its end (ABI
 * stable), and the slots below are its first 101 members in their order
 * (CreateStatus = slot 0 ... ReleaseSessionOptions = slot 100). Slots the
 * benchmark never calls are declared as `void *` placeholders; their names
 * are listed so the order can be checked against the header.
 *
 * ort_load() refuses a library whose GetVersionString() differs from
 * ORT_CAPI_VERSION (the version these declarations were checked against). */
#ifndef TP_BENCH_ORT_CAPI_H
#define TP_BENCH_ORT_CAPI_H
#include <stddef.h>
#include <stdint.h>

#define ORT_CAPI_VERSION "1.30.0" /* onnxruntime-node 1.30.0 */
#define ORT_CAPI_API_VERSION 30u  /* ORT_API_VERSION of that release */

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtAllocator OrtAllocator;

enum { ORT_LOGGING_LEVEL_WARNING = 2 };
enum { ORT_SEQUENTIAL = 0 };
enum { ORT_ENABLE_ALL = 99 };
enum { ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1 };
enum { OrtArenaAllocator = 1 };
enum { OrtMemTypeDefault = 0 };

#define ORT_SLOT(name) void *name
typedef struct OrtApi {
  ORT_SLOT(CreateStatus);                                        /* 0 */
  ORT_SLOT(GetErrorCode);                                        /* 1 */
  const char *(*GetErrorMessage)(const OrtStatus *status);       /* 2 */
  OrtStatus *(*CreateEnv)(int log_severity_level, const char *logid, OrtEnv **out); /* 3 */
  ORT_SLOT(CreateEnvWithCustomLogger);                           /* 4 */
  ORT_SLOT(EnableTelemetryEvents);                               /* 5 */
  ORT_SLOT(DisableTelemetryEvents);                              /* 6 */
  OrtStatus *(*CreateSession)(const OrtEnv *env, const char *model_path,
                              const OrtSessionOptions *options, OrtSession **out); /* 7 */
  ORT_SLOT(CreateSessionFromArray);                              /* 8 */
  OrtStatus *(*Run)(OrtSession *session, const OrtRunOptions *run_options,
                    const char *const *input_names, const OrtValue *const *inputs, size_t input_len,
                    const char *const *output_names, size_t output_names_len,
                    OrtValue **outputs);                         /* 9 */
  OrtStatus *(*CreateSessionOptions)(OrtSessionOptions **options); /* 10 */
  ORT_SLOT(SetOptimizedModelFilePath);                           /* 11 */
  ORT_SLOT(CloneSessionOptions);                                 /* 12 */
  OrtStatus *(*SetSessionExecutionMode)(OrtSessionOptions *options, int execution_mode); /* 13 */
  ORT_SLOT(EnableProfiling);                                     /* 14 */
  ORT_SLOT(DisableProfiling);                                    /* 15 */
  ORT_SLOT(EnableMemPattern);                                    /* 16 */
  ORT_SLOT(DisableMemPattern);                                   /* 17 */
  ORT_SLOT(EnableCpuMemArena);                                   /* 18 */
  ORT_SLOT(DisableCpuMemArena);                                  /* 19 */
  ORT_SLOT(SetSessionLogId);                                     /* 20 */
  ORT_SLOT(SetSessionLogVerbosityLevel);                         /* 21 */
  ORT_SLOT(SetSessionLogSeverityLevel);                          /* 22 */
  OrtStatus *(*SetSessionGraphOptimizationLevel)(OrtSessionOptions *options, int level); /* 23 */
  OrtStatus *(*SetIntraOpNumThreads)(OrtSessionOptions *options, int n); /* 24 */
  OrtStatus *(*SetInterOpNumThreads)(OrtSessionOptions *options, int n); /* 25 */
  ORT_SLOT(CreateCustomOpDomain);                                /* 26 */
  ORT_SLOT(CustomOpDomain_Add);                                  /* 27 */
  ORT_SLOT(AddCustomOpDomain);                                   /* 28 */
  ORT_SLOT(RegisterCustomOpsLibrary);                            /* 29 */
  OrtStatus *(*SessionGetInputCount)(const OrtSession *session, size_t *out);  /* 30 */
  OrtStatus *(*SessionGetOutputCount)(const OrtSession *session, size_t *out); /* 31 */
  ORT_SLOT(SessionGetOverridableInitializerCount);               /* 32 */
  ORT_SLOT(SessionGetInputTypeInfo);                             /* 33 */
  ORT_SLOT(SessionGetOutputTypeInfo);                            /* 34 */
  ORT_SLOT(SessionGetOverridableInitializerTypeInfo);            /* 35 */
  OrtStatus *(*SessionGetInputName)(const OrtSession *session, size_t index,
                                    OrtAllocator *allocator, char **value); /* 36 */
  OrtStatus *(*SessionGetOutputName)(const OrtSession *session, size_t index,
                                     OrtAllocator *allocator, char **value); /* 37 */
  ORT_SLOT(SessionGetOverridableInitializerName);                /* 38 */
  ORT_SLOT(CreateRunOptions);                                    /* 39 */
  ORT_SLOT(RunOptionsSetRunLogVerbosityLevel);                   /* 40 */
  ORT_SLOT(RunOptionsSetRunLogSeverityLevel);                    /* 41 */
  ORT_SLOT(RunOptionsSetRunTag);                                 /* 42 */
  ORT_SLOT(RunOptionsGetRunLogVerbosityLevel);                   /* 43 */
  ORT_SLOT(RunOptionsGetRunLogSeverityLevel);                    /* 44 */
  ORT_SLOT(RunOptionsGetRunTag);                                 /* 45 */
  ORT_SLOT(RunOptionsSetTerminate);                              /* 46 */
  ORT_SLOT(RunOptionsUnsetTerminate);                            /* 47 */
  ORT_SLOT(CreateTensorAsOrtValue);                              /* 48 */
  OrtStatus *(*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo *info, void *p_data, size_t p_data_len,
                                               const int64_t *shape, size_t shape_len, int type,
                                               OrtValue **out); /* 49 */
  ORT_SLOT(IsTensor);                                            /* 50 */
  OrtStatus *(*GetTensorMutableData)(OrtValue *value, void **out); /* 51 */
  ORT_SLOT(FillStringTensor);                                    /* 52 */
  ORT_SLOT(GetStringTensorDataLength);                           /* 53 */
  ORT_SLOT(GetStringTensorContent);                              /* 54 */
  ORT_SLOT(CastTypeInfoToTensorInfo);                            /* 55 */
  ORT_SLOT(GetOnnxTypeFromTypeInfo);                             /* 56 */
  ORT_SLOT(CreateTensorTypeAndShapeInfo);                        /* 57 */
  ORT_SLOT(SetTensorElementType);                                /* 58 */
  ORT_SLOT(SetDimensions);                                       /* 59 */
  OrtStatus *(*GetTensorElementType)(const OrtTensorTypeAndShapeInfo *info, int *out); /* 60 */
  ORT_SLOT(GetDimensionsCount);                                  /* 61 */
  ORT_SLOT(GetDimensions);                                       /* 62 */
  ORT_SLOT(GetSymbolicDimensions);                               /* 63 */
  OrtStatus *(*GetTensorShapeElementCount)(const OrtTensorTypeAndShapeInfo *info, size_t *out); /* 64 */
  OrtStatus *(*GetTensorTypeAndShape)(const OrtValue *value, OrtTensorTypeAndShapeInfo **out); /* 65 */
  ORT_SLOT(GetTypeInfo);                                         /* 66 */
  ORT_SLOT(GetValueType);                                        /* 67 */
  ORT_SLOT(CreateMemoryInfo);                                    /* 68 */
  OrtStatus *(*CreateCpuMemoryInfo)(int type, int mem_type, OrtMemoryInfo **out); /* 69 */
  ORT_SLOT(CompareMemoryInfo);                                   /* 70 */
  ORT_SLOT(MemoryInfoGetName);                                   /* 71 */
  ORT_SLOT(MemoryInfoGetId);                                     /* 72 */
  ORT_SLOT(MemoryInfoGetMemType);                                /* 73 */
  ORT_SLOT(MemoryInfoGetType);                                   /* 74 */
  ORT_SLOT(AllocatorAlloc);                                      /* 75 */
  OrtStatus *(*AllocatorFree)(OrtAllocator *allocator, void *p); /* 76 */
  ORT_SLOT(AllocatorGetInfo);                                    /* 77 */
  OrtStatus *(*GetAllocatorWithDefaultOptions)(OrtAllocator **out); /* 78 */
  ORT_SLOT(AddFreeDimensionOverride);                            /* 79 */
  ORT_SLOT(GetValue);                                            /* 80 */
  ORT_SLOT(GetValueCount);                                       /* 81 */
  ORT_SLOT(CreateValue);                                         /* 82 */
  ORT_SLOT(CreateOpaqueValue);                                   /* 83 */
  ORT_SLOT(GetOpaqueValue);                                      /* 84 */
  ORT_SLOT(KernelInfoGetAttribute_float);                        /* 85 */
  ORT_SLOT(KernelInfoGetAttribute_int64);                        /* 86 */
  ORT_SLOT(KernelInfoGetAttribute_string);                       /* 87 */
  ORT_SLOT(KernelContext_GetInputCount);                         /* 88 */
  ORT_SLOT(KernelContext_GetOutputCount);                        /* 89 */
  ORT_SLOT(KernelContext_GetInput);                              /* 90 */
  ORT_SLOT(KernelContext_GetOutput);                             /* 91 */
  void (*ReleaseEnv)(OrtEnv *p);                                 /* 92 */
  void (*ReleaseStatus)(OrtStatus *p);                           /* 93 */
  void (*ReleaseMemoryInfo)(OrtMemoryInfo *p);                   /* 94 */
  void (*ReleaseSession)(OrtSession *p);                         /* 95 */
  void (*ReleaseValue)(OrtValue *p);                             /* 96 */
  ORT_SLOT(ReleaseRunOptions);                                   /* 97 */
  ORT_SLOT(ReleaseTypeInfo);                                     /* 98 */
  void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *p); /* 99 */
  void (*ReleaseSessionOptions)(OrtSessionOptions *p);           /* 100 */
} OrtApi;
#undef ORT_SLOT

typedef struct OrtApiBase {
  const OrtApi *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} OrtApiBase;

/* ---- what the benchmark uses (ort_capi.c) ---- */
typedef struct ort_model {
  OrtSession *sess;
  char *in_name, *out_name; /* first input / output */
  OrtValue *x;              /* the input, over xbuf (resident runs) */
  float *xbuf;              /* ORT-side input buffer (aligned) */
  size_t xbytes;
  int64_t xshape[8];
  int xndim;
} ort_model;

/* Loads the library at path (dlopen), checks its version string against
 * ORT_CAPI_VERSION and gets the OrtApi of ORT_CAPI_API_VERSION; creates the
 * env. 0 on success; otherwise -1 and a message in err. */
int ort_load(const char *path, char *err, size_t errlen);
/* The loaded library's version string ("" before ort_load). */
const char *ort_version(void);
/* Intra-op threads of the sessions opened after it (default 1; 1..64):
 * 0, or -1 and a message (ort_last_error) for a count out of range. */
int ort_set_threads(int n);
/* A session on an ONNX file, CPU EP, intra-op threads as set (1 by
 * default), inter-op threads 1, sequential,
 * optimization level all; x: the input (f32, shape) copied into an
 * ORT-owned buffer. 0 on success; -1 and a message otherwise. */
int ort_model_open(ort_model *m, const char *onnx_path, const float *x, int ndim, const int64_t *shape,
                   char *err, size_t errlen);
/* One Run() on the resident input; the output (allocated by ORT) is
 * released unread. 0 on success. */
int ort_run_resident(ort_model *m);
/* End to end: copy src (the input, xbytes) into the ORT input buffer, Run(),
 * copy output 0 into dst (dst_bytes must equal its size), release it. */
int ort_run_e2e(ort_model *m, const float *src, float *dst, size_t dst_bytes);
/* Output 0's element count after one run (-1 on error). */
int64_t ort_out_numel(ort_model *m);
void ort_model_close(ort_model *m);
/* The last error message of a failed call. */
const char *ort_last_error(void);

#endif
