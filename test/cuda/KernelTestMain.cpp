//===- KernelTestMain.cpp - kiln-cuda-kernel-tests' main ------------------===//
//
// Part of Kiln's CUDA kernel tests. `--device=emulated` (the default) runs
// the kernels in the host emulator; `--device=gpu` on device 0 through the
// CUDA driver, and exits 77 (not run), saying why, when there is none.
//
//===----------------------------------------------------------------------===//

#include "test/cuda/KernelRunner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace kiln::cuda_test {
namespace {
std::unique_ptr<KernelRunner> &theRunner() {
  static std::unique_ptr<KernelRunner> r;
  return r;
}
} // namespace
KernelRunner &runner() { return *theRunner(); }
void setRunner(std::unique_ptr<KernelRunner> r) { theRunner() = std::move(r); }
} // namespace kiln::cuda_test

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string device = "emulated";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--device=", 9) == 0)
      device = argv[i] + 9;
    else {
      std::fprintf(stderr, "unknown argument %s; use --device=emulated|gpu\n",
                   argv[i]);
      return 2;
    }
  namespace ct = kiln::cuda_test;
  if (device == "gpu") {
#ifdef KILN_CUDA_TEST_GPU
    try {
      ct::setRunner(ct::makeGpuRunner());
    } catch (const std::exception &e) {
      std::fprintf(stderr, "NOT RUN: no GPU to run the CUDA kernels on: %s\n",
                   e.what());
      return 77;
    }
#else
    std::fprintf(stderr, "NOT RUN: built without the CUDA toolkit (NVRTC), "
                         "so without a GPU runner\n");
    return 77;
#endif
  } else if (device == "emulated") {
    ct::setRunner(ct::makeEmulatedRunner());
  } else {
    std::fprintf(stderr, "unknown device '%s'; use emulated or gpu\n",
                 device.c_str());
    return 2;
  }
  std::printf("CUDA kernels on: %s\n", ct::runner().describe().c_str());
  int status = RUN_ALL_TESTS();
  ct::setRunner(nullptr);
  return status;
}
