/*===- StubCudaDriver.c - A fake libcuda.so.1 for the driver tests -------===//
 *
 * Part of Kiln's unit tests. Exports the CUDA driver functions
 * runtime/cuda/CudaDriver.cpp resolves, with the driver's C signatures,
 * and behaves as KILN_STUB_CUDA_MODE (read at every call) says:
 *
 *   no-device     cuInit returns CUDA_ERROR_NO_DEVICE
 *   zero-devices  cuInit succeeds, cuDeviceGetCount reports 0
 *   old-driver    as ok, but cuDriverGetVersion reports 11.8
 *   ok (default)  one device, "Kiln stub GPU", sm_90, 132 SMs, 80 GiB
 *
 * In "ok" mode device memory is host memory (malloc), so copies round-trip,
 * and a module image is accepted only if it starts with kStubModule; it has
 * one kernel, kiln_test_fill(CUdeviceptr dst, unsigned value, unsigned long
 * long count), which sets `count` bytes at dst to `value` when launched. A
 * stream being captured records launches instead of running them, and a
 * graph launch runs them in order: enough to tell a capture from a run.
 * Anything else fails with CUDA_ERROR_INVALID_PTX (with a JIT log), or
 * CUDA_ERROR_NOT_FOUND for an unknown kernel.
 *
 * Built twice: as is, and with STUB_CUDA_OMIT_GRAPH_INSTANTIATE, as a
 * driver lacking cuGraphInstantiateWithFlags (one older than CUDA 11.4).
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
};

static const char kStubModule[] = "// kiln stub module";
#define MAX_CAPTURED 64

static int isMode(const char *mode) {
  const char *env = getenv("KILN_STUB_CUDA_MODE");
  return strcmp(env && *env ? env : "ok", mode) == 0;
}

/* Device queries fail before cuInit, as the driver's do. */
static int initialized;

CUresult cuInit(unsigned int flags) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (isMode("no-device"))
    return CUDA_ERROR_NO_DEVICE;
  initialized = 1;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = isMode("old-driver") ? 11080 : 13000;
  return CUDA_SUCCESS;
}

/* The real driver's names and descriptions of the codes returned here. */
static const struct {
  CUresult code;
  const char *name;
  const char *description;
} kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
     "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
};

/* Sets *name (or *description) for a known code; like the driver, sets it
 * to NULL and returns CUDA_ERROR_INVALID_VALUE for an unknown one. */
static CUresult lookUpError(CUresult error, const char **text, int name) {
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i)
    if (kErrors[i].code == error) {
      *text = name ? kErrors[i].name : kErrors[i].description;
      return CUDA_SUCCESS;
    }
  *text = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  return lookUpError(error, name, 1);
}

CUresult cuGetErrorString(CUresult error, const char **description) {
  return lookUpError(error, description, 0);
}

/*===-- Devices and contexts ----------------------------------------------===*/

static struct CUctx_st {
  int retained;
} primaryContext;

CUresult cuDeviceGetCount(int *count) {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = isMode("zero-devices") ? 0 : 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (isMode("zero-devices") || ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!name || length <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  strncpy(name, "Kiln stub GPU", (size_t)length);
  name[length - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
  case 16:
    *value = 132;
    return CUDA_SUCCESS; /* multiprocessor count */
  case 75:
    *value = 9;
    return CUDA_SUCCESS; /* compute capability major */
  case 76:
    *value = 0;
    return CUDA_SUCCESS; /* compute capability minor */
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  ++primaryContext.retained;
  *context = &primaryContext;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  if (device != 0 || primaryContext.retained == 0)
    return CUDA_ERROR_INVALID_DEVICE;
  --primaryContext.retained;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  return context == NULL || context == &primaryContext
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_HANDLE;
}

/*===-- Memory ------------------------------------------------------------===*/

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *memory = malloc(bytes);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = (CUdeviceptr)(size_t)memory;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  free((void *)(size_t)pointer);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr destination, const void *source,
                         size_t bytes) {
  memcpy((void *)(size_t)destination, source, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *destination, CUdeviceptr source, size_t bytes) {
  memcpy(destination, (const void *)(size_t)source, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr destination, unsigned char value,
                       size_t count) {
  memset((void *)(size_t)destination, value, count);
  return CUDA_SUCCESS;
}

/*===-- Modules and kernels -----------------------------------------------===*/

static struct CUmod_st {
  int loaded;
} stubModule;
static struct CUfunc_st {
  int unused;
} fillKernel;

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int numOptions, int *options,
                            void **optionValues) {
  if (!image)
    return CUDA_ERROR_INVALID_VALUE;
  if (strncmp((const char *)image, kStubModule, sizeof(kStubModule) - 1) == 0) {
    ++stubModule.loaded;
    *module = &stubModule;
    return CUDA_SUCCESS;
  }
  /* Writes the error log where CU_JIT_ERROR_LOG_BUFFER (5) asks, as much
   * as CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES (6) allows. */
  char *log = NULL;
  size_t logSize = 0;
  for (unsigned int i = 0; i < numOptions; ++i) {
    if (options[i] == 5)
      log = (char *)optionValues[i];
    if (options[i] == 6)
      logSize = (size_t)optionValues[i];
  }
  if (log && logSize > 0) {
    strncpy(log, "ptxas fatal : stub: not a Kiln stub module", logSize);
    log[logSize - 1] = '\0';
  }
  return CUDA_ERROR_INVALID_PTX;
}

CUresult cuModuleUnload(CUmodule module) {
  if (module != &stubModule || stubModule.loaded == 0)
    return CUDA_ERROR_INVALID_HANDLE;
  --stubModule.loaded;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  if (module != &stubModule)
    return CUDA_ERROR_INVALID_HANDLE;
  if (strcmp(name, "kiln_test_fill") != 0)
    return CUDA_ERROR_NOT_FOUND;
  *function = &fillKernel;
  return CUDA_SUCCESS;
}

/*===-- Streams, launches and graphs --------------------------------------===*/

/* One launch of kiln_test_fill, its arguments copied. */
struct Fill {
  CUdeviceptr destination;
  unsigned int value;
  unsigned long long count;
};

struct CUgraph_st {
  struct Fill fills[MAX_CAPTURED];
  int count;
};
struct CUgraphExec_st {
  struct CUgraph_st graph;
};
struct CUstream_st {
  struct CUgraph_st *capturing; /* NULL when not capturing */
};

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedMemBytes,
                        CUstream stream, void **kernelParams, void **extra) {
  if (function != &fillKernel || !kernelParams)
    return CUDA_ERROR_INVALID_VALUE;
  if (gridX * gridY * gridZ == 0 || blockX * blockY * blockZ == 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct Fill fill = {*(CUdeviceptr *)kernelParams[0],
                      *(unsigned int *)kernelParams[1],
                      *(unsigned long long *)kernelParams[2]};
  if (stream && stream->capturing) {
    struct CUgraph_st *graph = stream->capturing;
    if (graph->count == MAX_CAPTURED)
      return CUDA_ERROR_INVALID_VALUE;
    graph->fills[graph->count++] = fill;
    return CUDA_SUCCESS;
  }
  memset((void *)(size_t)fill.destination, (int)fill.value, fill.count);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  *stream = calloc(1, sizeof(struct CUstream_st));
  return *stream ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  if (!stream)
    return CUDA_ERROR_INVALID_HANDLE;
  free(stream->capturing);
  free(stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  return stream && stream->capturing ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                                     : CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream stream, int mode) {
  if (!stream || stream->capturing || mode < 0 || mode > 2)
    return CUDA_ERROR_INVALID_VALUE;
  stream->capturing = calloc(1, sizeof(struct CUgraph_st));
  return stream->capturing ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  if (!stream || !stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  *graph = stream->capturing;
  stream->capturing = NULL;
  return CUDA_SUCCESS;
}

#ifndef STUB_CUDA_OMIT_GRAPH_INSTANTIATE
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                     unsigned long long flags) {
  if (!graph || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *exec = malloc(sizeof(struct CUgraphExec_st));
  if (!*exec)
    return CUDA_ERROR_INVALID_VALUE;
  (*exec)->graph = *graph;
  return CUDA_SUCCESS;
}
#endif

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (!exec)
    return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < exec->graph.count; ++i) {
    const struct Fill *fill = &exec->graph.fills[i];
    memset((void *)(size_t)fill->destination, (int)fill->value, fill->count);
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  free(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  free(graph);
  return CUDA_SUCCESS;
}
