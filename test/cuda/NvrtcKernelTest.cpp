//===- NvrtcKernelTest.cpp - The CUDA kernels through NVRTC ---------------===//
//
// Part of Kiln's CUDA kernel tests. KernelInstances.cuh compiled by NVRTC
// for each architecture Kiln targets, as `kiln compile --target cuda:sm_XY`
// will compile it: no warnings; every kernel in the cubin, with its
// registers and frame read from the cubin itself; no local memory and no
// spills in the hot kernels; and the PTX of the GEMMs and GEMVs uses what
// makes them fast: mma.sync for f16/bf16, 16-byte read-only loads for the
// weights.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CubinResources.h"
#include "codegen/cuda/Nvrtc.h"
#include "test/cuda/CompileInstances.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace cg = kiln::codegen::cuda;

namespace {

const char *const kKernels[] = {
    "gemv_f32",
    "gemv_f32_norm",
    "gemv_f32_swiglu",
    "gemv_f32_norm_swiglu",
    "gemv_f16",
    "gemv_f16_norm",
    "gemv_f16_swiglu",
    "gemv_f16_norm_swiglu",
    "gemv_bf16",
    "gemv_bf16_norm",
    "gemv_bf16_swiglu",
    "gemv_bf16_norm_swiglu",
    "gemm_f32",
    "gemm_f32_norm",
    "gemm_f32_swiglu",
    "gemm_f32_norm_swiglu",
    "gemm_mma_f16",
    "gemm_mma_f16_norm",
    "gemm_mma_f16_swiglu",
    "gemm_mma_f16_norm_swiglu",
    "gemm_mma_bf16",
    "gemm_mma_bf16_norm",
    "gemm_mma_bf16_swiglu",
    "gemm_mma_bf16_norm_swiglu",
    "gemm_f32_large",
    "gemm_f32_large_norm",
    "gemm_f32_large_swiglu",
    "gemm_f32_large_norm_swiglu",
    "gemm_mma_f16_large",
    "gemm_mma_f16_large_norm",
    "gemm_mma_f16_large_swiglu",
    "gemm_mma_f16_large_norm_swiglu",
    "gemm_mma_bf16_large",
    "gemm_mma_bf16_large_norm",
    "gemm_mma_bf16_large_swiglu",
    "gemm_mma_bf16_large_norm_swiglu",
    "rms_norm_256",
    "rope_adjacent",
    "rope_halves",
    "swiglu_f32",
    "add_f32",
    "gather_rows_f32",
    "copy_columns_f32",
    "embedding_f32",
    "embedding_f16",
    "embedding_bf16",
    "argmax_256",
    "kv_append_f32",
    "kv_append_f16",
    "kv_append_bf16",
    "attention_f32_d8",
    "attention_f32_d64",
    "attention_f16_d64",
    "attention_bf16_d64",
    "attention_f16_d128",
    "attention_combine_d8",
    "attention_combine_d64",
    "attention_combine_d128",
    "read_probe_256",
};

/// Kernels allowed a stack frame, and why: not hot, and the frame is not
/// spills. rope's is sinf/cosf's exact argument reduction (Payne-Hanek)
/// for angles past 105615 radians, which keeps its table in local memory
/// and runs only for such angles (long contexts' low frequencies).
const std::set<std::string> kFrameAllowed = {"rope_adjacent", "rope_halves"};

/// The PTX text of one entry function.
std::string entryPtx(const std::string &ptx, const std::string &kernel) {
  size_t begin = ptx.find(".entry " + kernel + "(");
  if (begin == std::string::npos)
    return "";
  size_t end = ptx.find(".entry ", begin + 1);
  return ptx.substr(begin, end == std::string::npos ? end : end - begin);
}

class NvrtcKernels : public ::testing::TestWithParam<std::string> {
protected:
  static cg::NvrtcResult compile(const std::string &arch) {
    return kiln::cuda_test::compileKernelInstances(arch);
  }
};

TEST_P(NvrtcKernels, CompileWithoutWarningsSpillsOrLocalMemory) {
  cg::NvrtcResult result = compile(GetParam());
  std::vector<std::string> warnings = cg::nvrtcWarnings(result.log);
  EXPECT_TRUE(warnings.empty())
      << "NVRTC " << cg::nvrtcVersion() << " for " << GetParam() << ":\n"
      << result.log;

  auto resources = cg::readCubinResources(result.cubin);
  cg::addPtxasSpills(resources, result.log);
  for (const char *kernel : kKernels) {
    SCOPED_TRACE(std::string(kernel) + " for " + GetParam());
    auto it = resources.find(kernel);
    ASSERT_NE(it, resources.end()) << "not in the cubin";
    const cg::KernelResources &r = it->second;
    EXPECT_GT(r.registers, 0) << "no register count in the cubin";
    EXPECT_LE(r.registers, 255);
    EXPECT_EQ(r.spillStoreBytes, 0);
    EXPECT_EQ(r.spillLoadBytes, 0);
    // A kernel without a frame has no FRAME_SIZE attribute, or a zero one.
    int frame = r.frameBytes < 0 ? 0 : r.frameBytes;
    if (!kFrameAllowed.count(kernel))
      EXPECT_EQ(frame, 0) << "bytes of local memory per thread";
  }
}

TEST_P(NvrtcKernels, PtxUsesTensorCoresAndVectorLoads) {
  cg::NvrtcResult result = compile(GetParam());
  const std::regex mmaF16(
      R"(mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32)");
  const std::regex mmaBf16(
      R"(mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32)");
  const std::regex load16(R"(ld\.global\.nc\.v4\.u32)");
  for (std::string form :
       {"", "_norm", "_swiglu", "_norm_swiglu", "_large", "_large_norm",
        "_large_swiglu", "_large_norm_swiglu"}) {
    std::string f16 = "gemm_mma_f16" + form, bf16 = "gemm_mma_bf16" + form;
    std::string gemvForm = form.substr(form.rfind("_large", 0) == 0 ? 6 : 0);
    EXPECT_TRUE(std::regex_search(entryPtx(result.ptx, f16), mmaF16)) << f16;
    EXPECT_TRUE(std::regex_search(entryPtx(result.ptx, bf16), mmaBf16)) << bf16;
    for (std::string kernel : {"gemv_f32" + gemvForm, "gemv_f16" + gemvForm,
                               "gemv_bf16" + gemvForm, f16, bf16}) {
      EXPECT_TRUE(std::regex_search(entryPtx(result.ptx, kernel), load16))
          << kernel << " has no 16-byte read-only load";
    }
  }
  // f32 stays f32: no TF32 (or any) tensor-core op in the f32 GEMM.
  for (const char *f32 : {"gemm_f32", "gemm_f32_large"})
    EXPECT_FALSE(
        std::regex_search(entryPtx(result.ptx, f32), std::regex(R"(\bmma\.)")))
        << f32;
}

INSTANTIATE_TEST_SUITE_P(Architectures, NvrtcKernels,
                         ::testing::Values("sm_80", "sm_90"));

TEST(CubinResources, RejectsWhatIsNotACubin) {
  EXPECT_THROW(cg::readCubinResources(std::vector<char>(10, 'x')),
               cg::CubinError);
  std::vector<char> truncated(std::vector<char>{0x7f, 'E', 'L', 'F', 2});
  EXPECT_THROW(cg::readCubinResources(truncated), cg::CubinError);
}

TEST(Nvrtc, ReportsCompileErrorsWithTheLog) {
  try {
    cg::compileWithNvrtc("extern \"C\" __global__ void k() { undeclared(); }",
                         "broken.cu", {});
    FAIL() << "no error";
  } catch (const cg::NvrtcError &e) {
    EXPECT_NE(std::string(e.what()).find("broken.cu"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("undeclared"), std::string::npos)
        << e.what();
  }
}

} // namespace
