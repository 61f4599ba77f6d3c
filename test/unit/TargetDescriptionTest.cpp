//===- TargetDescriptionTest.cpp - Target specs and host detection --------===//
//
// Part of Kiln's unit tests. Links only kiln_target (LLVM, no MLIR). The
// named targets' numbers are checked against the table documented in
// passes/target/TargetDescription.h and docs/targets.md: tiling depends on
// them, so changing one must be deliberate.
//
//===----------------------------------------------------------------------===//

#include "passes/target/TargetDescription.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace kiln::target;

namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

TargetDescription parse(llvm::StringRef spec) {
  llvm::Expected<TargetDescription> t = parseTarget(spec);
  if (!t) {
    ADD_FAILURE() << spec.str() << ": " << llvm::toString(t.takeError());
    return {};
  }
  return *t;
}

std::string errorOf(llvm::StringRef spec) {
  llvm::Expected<TargetDescription> t = parseTarget(spec);
  if (t)
    return "parsed as " + t->spec();
  return llvm::toString(t.takeError());
}

//===----------------------------------------------------------------------===//
// Named targets
//===----------------------------------------------------------------------===//

TEST(TargetDescription, EveryNamedTargetParsesUnderItsName) {
  std::vector<std::string> names = namedTargets();
  EXPECT_EQ(names.size(), 8u);
  for (const std::string &name : names) {
    TargetDescription t = parse(name);
    EXPECT_EQ(t.name, name);
    EXPECT_EQ(t.isCpu(), name.rfind("cuda:", 0) != 0) << name;
    EXPECT_FALSE(t.origin.empty()) << name;
    EXPECT_TRUE(t.notes.empty()) << name;
  }
}

TEST(TargetDescription, NamedCpuNumbersAreTheDocumentedOnes) {
  const CpuTarget portable = parse("portable").cpu();
  EXPECT_EQ(portable.isa, CpuIsa::Portable);
  EXPECT_EQ(portable.vectorBits, 128u);
  EXPECT_FALSE(portable.fma || portable.f16c || portable.avx512bf16 ||
               portable.avx512vnni || portable.avxvnni);
  EXPECT_EQ(portable.cores, 4u);
  EXPECT_EQ(portable.l1dBytes, 32 * kKiB);
  EXPECT_EQ(portable.l2Bytes, 1 * kMiB);
  EXPECT_EQ(portable.l3Bytes, 32 * kMiB);

  const CpuTarget avx2 = parse("avx2").cpu();
  EXPECT_EQ(avx2.isa, CpuIsa::AVX2);
  EXPECT_EQ(avx2.vectorBits, 256u);
  EXPECT_EQ(avx2.vectorFloats(), 8u);
  EXPECT_TRUE(avx2.fma && avx2.f16c);
  EXPECT_FALSE(avx2.avx512bf16 || avx2.avx512vnni || avx2.avxvnni);
  EXPECT_EQ(avx2.cores, 8u);
  EXPECT_EQ(avx2.l1dBytes, 32 * kKiB);
  EXPECT_EQ(avx2.l2Bytes, 512 * kKiB);
  EXPECT_EQ(avx2.l3Bytes, 32 * kMiB);

  const CpuTarget avx512 = parse("avx512+bf16+vnni").cpu();
  EXPECT_EQ(avx512.isa, CpuIsa::AVX512);
  EXPECT_EQ(avx512.vectorBits, 512u);
  EXPECT_EQ(avx512.vectorFloats(), 16u);
  EXPECT_TRUE(avx512.fma && avx512.f16c && avx512.avx512bf16 &&
              avx512.avx512vnni);
  EXPECT_FALSE(avx512.avxvnni);
  EXPECT_EQ(avx512.cores, 56u);
  EXPECT_EQ(avx512.l1dBytes, 48 * kKiB);
  EXPECT_EQ(avx512.l2Bytes, 2 * kMiB);
  EXPECT_EQ(avx512.l3Bytes, 105 * kMiB);
  EXPECT_FALSE(parse("avx512").cpu().avx512bf16);
}

TEST(TargetDescription, NamedCudaNumbersAreTheDocumentedOnes) {
  const CudaTarget a100 = parse("cuda:sm_80").cuda();
  EXPECT_EQ(a100.smMajor, 8u);
  EXPECT_EQ(a100.smMinor, 0u);
  EXPECT_EQ(a100.sharedMemPerBlockBytes, 163 * kKiB);
  EXPECT_EQ(a100.smCount, 108u);
  EXPECT_EQ(parse("cuda:sm_86").cuda().sharedMemPerBlockBytes, 99 * kKiB);
  EXPECT_EQ(parse("cuda:sm_89").cuda().smMinor, 9u);

  const CudaTarget h100 = parse("cuda:sm_90").cuda();
  EXPECT_EQ(h100.smMajor, 9u);
  EXPECT_EQ(h100.sharedMemPerBlockBytes, 227 * kKiB);
  EXPECT_EQ(h100.smCount, 132u);
  EXPECT_EQ(h100.registersPerThread, 255u);
  EXPECT_EQ(h100.registersPerSM, 65536u);
  EXPECT_EQ(h100.warpSize, 32u);
}

//===----------------------------------------------------------------------===//
// Canonical specs
//===----------------------------------------------------------------------===//

TEST(TargetDescription, SpecSpellsOutEveryNumber) {
  EXPECT_EQ(parse("avx2").spec(), "avx2,cores=8,l1d=32KiB,l2=512KiB,l3=32MiB");
  EXPECT_EQ(parse("avx512+bf16+vnni").spec(),
            "avx512+bf16+vnni,cores=56,l1d=48KiB,l2=2MiB,l3=105MiB");
  EXPECT_EQ(parse("cuda:sm_90").spec(),
            "cuda:sm_90,smem=227KiB,regs=255,sm_count=132");
  // A size no unit divides is written in bytes.
  EXPECT_EQ(parse("portable,l2=1000").spec(),
            "portable,cores=4,l1d=32KiB,l2=1000,l3=32MiB");
}

TEST(TargetDescription, SpecRoundTripsForNamedTargetsAndNative) {
  std::vector<std::string> specs = namedTargets();
  specs.push_back("native");
  specs.push_back("avx2+avxvnni,cores=3,l2=1000");
  specs.push_back("portable+fma+f16c");
  specs.push_back("cuda:sm_86,smem=64KiB,regs=128,sm_count=7");
  for (const std::string &spec : specs) {
    TargetDescription t = parse(spec);
    TargetDescription again = parse(t.spec());
    EXPECT_EQ(again, t) << spec << " -> " << t.spec() << " -> " << again.spec();
    EXPECT_EQ(again.spec(), t.spec());
  }
}

TEST(TargetDescription, ExtensionsAreWrittenInCanonicalOrder) {
  EXPECT_EQ(parse("avx512+vnni+bf16").name, "avx512+bf16+vnni");
  // AVX2 and above imply FMA and F16C, so the name leaves them out.
  EXPECT_EQ(parse("avx2+fma+f16c").name, "avx2");
  EXPECT_EQ(parse("portable+f16c+fma").name, "portable+fma+f16c");
  EXPECT_TRUE(parse("avx512+avxvnni").cpu().avxvnni);
  TargetDescription amx = parse("avx512+amx-int8+bf16+amx-bf16");
  EXPECT_EQ(amx.name, "avx512+bf16+amx-bf16+amx-int8");
  EXPECT_TRUE(amx.cpu().amxBf16 && amx.cpu().amxInt8);
  EXPECT_EQ(parse(amx.spec()), amx);
  EXPECT_NE(parse("avx512+amx-bf16"), parse("avx512+amx-int8"));
}

TEST(TargetDescription, OverridesReplaceDefaultsAndAreNoted) {
  TargetDescription t = parse("avx512+bf16+vnni,cores=16,l1d=48KiB,l3=1GiB");
  EXPECT_EQ(t.name, "avx512+bf16+vnni");
  EXPECT_EQ(t.cpu().cores, 16u);
  EXPECT_EQ(t.cpu().l1dBytes, 48 * kKiB);
  EXPECT_EQ(t.cpu().l2Bytes, 2 * kMiB);
  EXPECT_EQ(t.cpu().l3Bytes, 1024 * kMiB);
  // l1d equals the default, so only cores and l3 are notes.
  ASSERT_EQ(t.notes.size(), 2u);
  EXPECT_EQ(t.notes[0], "cores = 16 from the spec (56 by default)");
  EXPECT_EQ(t.notes[1], "l3 = 1 GiB from the spec (105 MiB by default)");

  TargetDescription g = parse("cuda:sm_80, smem=100KiB ,regs=64,sm_count=54");
  EXPECT_EQ(g.cuda().sharedMemPerBlockBytes, 100 * kKiB);
  EXPECT_EQ(g.cuda().registersPerThread, 64u);
  EXPECT_EQ(g.cuda().smCount, 54u);
  EXPECT_EQ(g.cuda().registersPerSM, 65536u);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(TargetDescription, UnknownNamesListWhatIsAccepted) {
  EXPECT_EQ(errorOf("bogus"),
            "invalid target 'bogus': unknown name 'bogus'; expected native, "
            "portable, avx2 or avx512 (avx2 and avx512 with +extensions, e.g. "
            "avx512+bf16+vnni) or cuda:sm_80, cuda:sm_86, cuda:sm_89, "
            "cuda:sm_90, then optional ,key=value overrides");
  EXPECT_EQ(errorOf("sm_90"), "invalid target 'sm_90': unknown name 'sm_90'; "
                              "did you mean 'cuda:sm_90'?");
  EXPECT_EQ(errorOf("cuda:sm_75"),
            "invalid target 'cuda:sm_75': unknown CUDA architecture 'sm_75'; "
            "expected sm_80, sm_86, sm_89 or sm_90");
  EXPECT_NE(errorOf("cuda:native").find("cuda:native is for kiln compile"),
            std::string::npos);
  EXPECT_NE(errorOf("").find("no target name"), std::string::npos);
}

TEST(TargetDescription, ExtensionsMustExistAndFitTheIsa) {
  EXPECT_EQ(errorOf("avx2+bf16"), "invalid target 'avx2+bf16': extension "
                                  "'+bf16' needs avx512 or above, not avx2");
  EXPECT_EQ(errorOf("portable+avxvnni"),
            "invalid target 'portable+avxvnni': extension '+avxvnni' needs "
            "avx2 or above, not portable");
  EXPECT_NE(errorOf("avx512+amx").find("unknown extension '+amx'; expected"),
            std::string::npos);
  EXPECT_NE(errorOf("native+bf16").find("native takes no +extensions"),
            std::string::npos);
}

TEST(TargetDescription, BadOverridesNameTheKey) {
  for (const char *spec : {"avx2,l2=12XB", "avx2,l2=0", "avx2,l2=1MiBKiB",
                           "avx2,l2=-1KiB", "avx2,l2=KiB"})
    EXPECT_NE(errorOf(spec).find("is not a size; expected a positive whole "
                                 "number of bytes, optionally with KiB, MiB "
                                 "or GiB"),
              std::string::npos)
        << spec << ": " << errorOf(spec);
  EXPECT_EQ(errorOf("avx2,l2=12XB"),
            "invalid target 'avx2,l2=12XB': l2 = '12XB' is not a size; "
            "expected a positive whole number of bytes, optionally with KiB, "
            "MiB or GiB (e.g. 48KiB)");
  EXPECT_EQ(errorOf("avx2,cores=0"),
            "invalid target 'avx2,cores=0': cores = '0' is not a count; "
            "expected a positive whole number");
  EXPECT_EQ(errorOf("avx2,foo=1"),
            "invalid target 'avx2,foo=1': unknown key 'foo'; CPU targets "
            "accept cores, l1d, l2 and l3");
  EXPECT_EQ(errorOf("cuda:sm_90,cores=4"),
            "invalid target 'cuda:sm_90,cores=4': unknown key 'cores'; CUDA "
            "targets accept smem, regs and sm_count");
  EXPECT_EQ(errorOf("cuda:sm_90,regs=256"),
            "invalid target 'cuda:sm_90,regs=256': regs = 256 is more than "
            "255, the most a CUDA thread can address");
  EXPECT_EQ(errorOf("avx2,cores"),
            "invalid target 'avx2,cores': override 'cores' is not key=value");
  EXPECT_EQ(errorOf("avx2,"),
            "invalid target 'avx2,': override '' is not key=value");
  EXPECT_EQ(errorOf("avx2,cores=2,cores=3"),
            "invalid target 'avx2,cores=2,cores=3': 'cores' is given twice");
}

//===----------------------------------------------------------------------===//
// Host detection
//===----------------------------------------------------------------------===//

TEST(TargetDescription, NativeDetectionGivesSaneValues) {
  TargetDescription t = detectHostCpu();
  ASSERT_TRUE(t.isCpu());
  const CpuTarget &c = t.cpu();
  EXPECT_GE(c.cores, 1u);
  EXPECT_GT(c.l1dBytes, 0u);
  EXPECT_GT(c.l2Bytes, 0u);
  EXPECT_GT(c.l3Bytes, 0u);
  unsigned expectedBits = c.isa == CpuIsa::AVX512 ? 512
                          : c.isa == CpuIsa::AVX2 ? 256
                                                  : 128;
  EXPECT_EQ(c.vectorBits, expectedBits);
  if (c.isa != CpuIsa::Portable)
    EXPECT_TRUE(c.fma && c.f16c);
  if (c.isa != CpuIsa::AVX512)
    EXPECT_FALSE(c.avx512bf16 || c.avx512vnni);
  EXPECT_EQ(parse("native"), t);

  std::string block;
  llvm::raw_string_ostream os(block);
  printTarget(os, t);
  EXPECT_NE(block.find("spec      " + t.spec()), std::string::npos) << block;
}

/// A sysfs-like cache directory; removed when the test ends.
struct FakeCacheDir {
  llvm::SmallString<128> path;
  FakeCacheDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("kiln-cache", path));
  }
  ~FakeCacheDir() { llvm::sys::fs::remove_directories(path); }
  void add(llvm::StringRef index, llvm::StringRef level, llvm::StringRef type,
           llvm::StringRef size) {
    llvm::SmallString<128> dir(path);
    llvm::sys::path::append(dir, index);
    ASSERT_FALSE(llvm::sys::fs::create_directory(dir));
    for (auto [file, text] :
         {std::pair{"level", level}, std::pair{"type", type},
          std::pair{"size", size}}) {
      std::error_code ec;
      llvm::raw_fd_ostream out((dir + "/" + file).str(), ec);
      ASSERT_FALSE(ec);
      out << text << "\n";
    }
  }
};

llvm::StringMap<bool> features(std::initializer_list<const char *> names) {
  llvm::StringMap<bool> map;
  for (const char *name : names)
    map[name] = true;
  map["avx512er"] = false; // present but off, as getHostCPUFeatures reports
  return map;
}

TEST(TargetDescription, DetectionReadsCachesFromSysfs) {
  FakeCacheDir dir;
  dir.add("index0", "1", "Data", "48K");
  dir.add("index1", "1", "Instruction", "32K");
  dir.add("index2", "2", "Unified", "2048K");
  dir.add("index3", "3", "Unified", "260M");
  TargetDescription t =
      describeHostCpu(features({"avx2", "fma", "f16c"}), dir.path, 6, "znver3");
  EXPECT_EQ(t.cpu().l1dBytes, 48 * kKiB);
  EXPECT_EQ(t.cpu().l2Bytes, 2 * kMiB);
  EXPECT_EQ(t.cpu().l3Bytes, 260 * kMiB);
  EXPECT_EQ(t.cpu().cores, 6u);
  EXPECT_TRUE(t.notes.empty());
  EXPECT_EQ(t.origin, "this machine (znver3)");
}

TEST(TargetDescription, DetectionFallsBackToPortableCachesAndSaysSo) {
  FakeCacheDir dir;
  dir.add("index0", "1", "Data", "64K");
  TargetDescription t = describeHostCpu(features({}), dir.path, 0, "generic");
  EXPECT_EQ(t.name, "portable");
  EXPECT_EQ(t.cpu().cores, 1u);
  EXPECT_EQ(t.cpu().l1dBytes, 64 * kKiB);
  EXPECT_EQ(t.cpu().l2Bytes, 1 * kMiB);
  EXPECT_EQ(t.cpu().l3Bytes, 32 * kMiB);
  ASSERT_EQ(t.notes.size(), 2u);
  EXPECT_EQ(t.notes[0], "L2 size not found in " + dir.path.str().str() +
                            "; using portable's 1 MiB");
}

TEST(TargetDescription, DetectionNeedsEveryFeatureOfAnIsaLevel) {
  FakeCacheDir dir;
  auto isaOf = [&](std::initializer_list<const char *> names) {
    return describeHostCpu(features(names), dir.path, 1, "test").name;
  };
  EXPECT_EQ(isaOf({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                   "avx512dq", "avx512bf16", "avx512vnni", "avxvnni"}),
            "avx512+bf16+vnni+avxvnni");
  // No avx512dq: AVX2, and the AVX-512 extensions do not count.
  EXPECT_EQ(isaOf({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                   "avx512bf16", "avx512vnni"}),
            "avx2");
  // AVX2 without FMA (a hypervisor hiding it) is not AVX2 to Kiln.
  EXPECT_EQ(isaOf({"avx2", "f16c"}), "portable+f16c");
  EXPECT_EQ(isaOf({"avx2", "fma", "f16c", "avxvnni"}), "avx2+avxvnni");
  // AMX counts with its tiles and AVX-512 (Sapphire Rapids and later).
  EXPECT_EQ(
      isaOf({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
             "avx512dq", "avx512bf16", "amx-tile", "amx-bf16", "amx-int8"}),
      "avx512+bf16+amx-bf16+amx-int8");
  EXPECT_EQ(isaOf({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                   "avx512dq", "amx-bf16", "amx-int8"}),
            "avx512");
  EXPECT_EQ(isaOf({"avx2", "fma", "f16c", "amx-tile", "amx-int8"}), "avx2");
  EXPECT_EQ(isaOf({"sse2", "sse4.2"}), "portable");
}

} // namespace
