//===- TargetDescription.cpp - What Kiln compiles for ---------------------===//
//
// Part of Kiln. The named targets' numbers, the spec parser and printer, and
// host CPU detection. The numbers and their sources are listed in
// TargetDescription.h and docs/targets.md; keep the three in step.
//
//===----------------------------------------------------------------------===//

#include "passes/target/TargetDescription.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Threading.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <thread>

using namespace kiln::target;
using llvm::StringRef;

namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

/// The most registers a thread can address on every CUDA architecture Kiln
/// names (the ISA encodes register numbers in 8 bits, R255 is RZ).
constexpr unsigned kMaxCudaRegisters = 255;

//===----------------------------------------------------------------------===//
// Named targets
//===----------------------------------------------------------------------===//

struct NamedCpu {
  CpuIsa isa;
  const char *name;
  unsigned cores;
  uint64_t l1d, l2, l3;
  const char *origin;
};

const NamedCpu kNamedCpus[] = {
    {CpuIsa::Portable, "portable", 4, 32 * kKiB, 1 * kMiB, 32 * kMiB,
     "a composite, no one part: x86's usual L1d, AWS Graviton2's L2 and L3"},
    {CpuIsa::AVX2, "avx2", 8, 32 * kKiB, 512 * kKiB, 32 * kMiB,
     "AMD EPYC 7003 (Zen 3), one 8-core CCD"},
    {CpuIsa::AVX512, "avx512", 56, 48 * kKiB, 2 * kMiB, 105 * kMiB,
     "Intel Xeon Platinum 8480+ (Sapphire Rapids)"},
};

struct NamedGpu {
  const char *arch;
  unsigned major, minor;
  uint64_t sharedMem;
  unsigned smCount;
  const char *origin;
};

// Opt-in shared memory per block and SM counts from NVIDIA's CUDA C
// Programming Guide (compute capabilities table) and the product datasheets.
const NamedGpu kNamedGpus[] = {
    {"sm_80", 8, 0, 163 * kKiB, 108, "NVIDIA A100"},
    {"sm_86", 8, 6, 99 * kKiB, 72, "NVIDIA A10"},
    {"sm_89", 8, 9, 99 * kKiB, 58, "NVIDIA L4"},
    {"sm_90", 9, 0, 227 * kKiB, 132, "NVIDIA H100 SXM / H200"},
};

const NamedCpu &namedCpu(CpuIsa isa) {
  return *llvm::find_if(kNamedCpus,
                        [&](const NamedCpu &c) { return c.isa == isa; });
}

unsigned vectorBitsOf(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Portable:
    return 128;
  case CpuIsa::AVX2:
    return 256;
  case CpuIsa::AVX512:
    return 512;
  }
  llvm_unreachable("unknown CpuIsa");
}

/// A CPU extension as the spec spells it (`+bf16`), the flag it sets and
/// the lowest ISA level that has it.
struct Extension {
  const char *name;
  bool CpuTarget::*flag;
  CpuIsa needs;
  /// Every CPU at AVX2 or above has it, so the canonical spec leaves it out.
  bool impliedByAvx2;
};

// In canonical-spec order.
const Extension kExtensions[] = {
    {"fma", &CpuTarget::fma, CpuIsa::Portable, true},
    {"f16c", &CpuTarget::f16c, CpuIsa::Portable, true},
    {"bf16", &CpuTarget::avx512bf16, CpuIsa::AVX512, false},
    {"vnni", &CpuTarget::avx512vnni, CpuIsa::AVX512, false},
    {"avxvnni", &CpuTarget::avxvnni, CpuIsa::AVX2, false},
    {"amx-bf16", &CpuTarget::amxBf16, CpuIsa::AVX512, false},
    {"amx-int8", &CpuTarget::amxInt8, CpuIsa::AVX512, false},
};

StringRef isaName(CpuIsa isa) { return namedCpu(isa).name; }

CpuTarget namedCpuTarget(CpuIsa isa) {
  const NamedCpu &n = namedCpu(isa);
  CpuTarget c;
  c.isa = isa;
  c.fma = c.f16c = isa != CpuIsa::Portable;
  c.vectorBits = vectorBitsOf(isa);
  c.cores = n.cores;
  c.l1dBytes = n.l1d;
  c.l2Bytes = n.l2;
  c.l3Bytes = n.l3;
  return c;
}

/// "avx512+bf16+vnni": the ISA level and the extensions it does not imply.
std::string canonicalCpuName(const CpuTarget &c) {
  std::string name = isaName(c.isa).str();
  for (const Extension &e : kExtensions)
    if (c.*e.flag && !(e.impliedByAvx2 && c.isa != CpuIsa::Portable))
      name += std::string("+") + e.name;
  return name;
}

//===----------------------------------------------------------------------===//
// Numbers in specs
//===----------------------------------------------------------------------===//

/// "48KiB", "2MiB", or plain bytes: the largest unit that divides exactly.
std::string formatSize(uint64_t bytes, StringRef separator = "") {
  for (auto [unit, suffix] :
       {std::pair{kGiB, "GiB"}, std::pair{kMiB, "MiB"}, std::pair{kKiB, "KiB"}})
    if (bytes >= unit && bytes % unit == 0)
      return std::to_string(bytes / unit) + separator.str() + suffix;
  return std::to_string(bytes) + (separator.empty() ? "" : " bytes");
}

/// A positive byte count, optionally with KiB, MiB or GiB.
std::optional<uint64_t> parseSize(StringRef text) {
  uint64_t unit = 1;
  for (auto [u, suffix] :
       {std::pair{kKiB, "KiB"}, std::pair{kMiB, "MiB"}, std::pair{kGiB, "GiB"}})
    if (text.consume_back(suffix)) {
      unit = u;
      break;
    }
  uint64_t n;
  if (text.empty() || !llvm::all_of(text, llvm::isDigit) ||
      text.getAsInteger(10, n) || n == 0 || n > UINT64_MAX / unit)
    return std::nullopt;
  return n * unit;
}

std::optional<unsigned> parseCount(StringRef text) {
  unsigned n;
  if (text.empty() || !llvm::all_of(text, llvm::isDigit) ||
      text.getAsInteger(10, n) || n == 0)
    return std::nullopt;
  return n;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

const char kAcceptedNames[] =
    "native, portable, avx2 or avx512 (avx2 and avx512 with +extensions, "
    "e.g. avx512+bf16+vnni) or cuda:sm_80, cuda:sm_86, cuda:sm_89, "
    "cuda:sm_90, then optional ,key=value overrides";

/// Collects errors for one spec, each prefixed with the whole spec.
struct SpecError {
  StringRef spec;
  llvm::Error operator()(const llvm::Twine &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid target '" + spec + "': " + message);
  }
};

llvm::Expected<TargetDescription> parseCpuHead(StringRef head,
                                               const SpecError &error) {
  llvm::SmallVector<StringRef> parts;
  head.split(parts, '+');
  StringRef base = parts.front();
  if (base == "native") {
    if (parts.size() > 1)
      return error("native takes no +extensions (they are detected); drop "
                   "'+" +
                   parts[1] + "'");
    return detectHostCpu();
  }
  const NamedCpu *named = llvm::find_if(
      kNamedCpus, [&](const NamedCpu &c) { return base == c.name; });
  if (named == std::end(kNamedCpus)) {
    if (base.starts_with("sm_"))
      return error("unknown name '" + base + "'; did you mean 'cuda:" + base +
                   "'?");
    return error("unknown name '" + base + "'; expected " + kAcceptedNames);
  }
  TargetDescription t;
  CpuTarget c = namedCpuTarget(named->isa);
  for (StringRef name : llvm::ArrayRef(parts).drop_front()) {
    const Extension *e = llvm::find_if(
        kExtensions, [&](const Extension &e) { return name == e.name; });
    if (e == std::end(kExtensions))
      return error("unknown extension '+" + name +
                   "'; expected +fma, +f16c (portable only; avx2 and avx512 "
                   "imply them), +avxvnni (avx2, avx512), +bf16, +vnni, "
                   "+amx-bf16 or +amx-int8 (avx512)");
    if (e->needs > c.isa)
      return error("extension '+" + name + "' needs " + isaName(e->needs) +
                   " or above, not " + base);
    c.*e->flag = true;
  }
  t.device = c;
  t.name = canonicalCpuName(c);
  t.origin = named->origin;
  return t;
}

llvm::Expected<TargetDescription> parseCudaHead(StringRef arch,
                                                const SpecError &error) {
  if (arch == "native")
    return error("cuda:native is for kiln compile, which asks the CUDA "
                 "driver about the device; here name the architecture: "
                 "cuda:sm_80, cuda:sm_86, cuda:sm_89 or cuda:sm_90");
  const NamedGpu *named = llvm::find_if(
      kNamedGpus, [&](const NamedGpu &g) { return arch == g.arch; });
  if (named == std::end(kNamedGpus))
    return error("unknown CUDA architecture '" + arch +
                 "'; expected sm_80, sm_86, sm_89 or sm_90");
  CudaTarget g;
  g.smMajor = named->major;
  g.smMinor = named->minor;
  g.sharedMemPerBlockBytes = named->sharedMem;
  g.registersPerThread = kMaxCudaRegisters;
  g.registersPerSM = 65536;
  g.warpSize = 32;
  g.smCount = named->smCount;
  TargetDescription t;
  t.name = "cuda:" + arch.str();
  t.device = g;
  t.origin = named->origin;
  return t;
}

/// Applies one `key=value` to `t`, noting a change from the default.
llvm::Error applyOverride(TargetDescription &t, StringRef key, StringRef value,
                          const SpecError &error) {
  auto noteChange = [&](uint64_t before, uint64_t after, bool size) {
    if (before == after)
      return;
    auto show = [&](uint64_t v) {
      return size ? formatSize(v, " ") : std::to_string(v);
    };
    t.notes.push_back(key.str() + " = " + show(after) + " from the spec (" +
                      show(before) + " by default)");
  };
  auto setSize = [&](uint64_t &field) -> llvm::Error {
    std::optional<uint64_t> bytes = parseSize(value);
    if (!bytes)
      return error(key + " = '" + value +
                   "' is not a size; expected a positive whole number of "
                   "bytes, optionally with KiB, MiB or GiB (e.g. 48KiB)");
    noteChange(field, *bytes, true);
    field = *bytes;
    return llvm::Error::success();
  };
  // Only regs has a maximum (kMaxCudaRegisters), hence the message.
  auto setCount = [&](unsigned &field, unsigned max = UINT_MAX) -> llvm::Error {
    std::optional<unsigned> n = parseCount(value);
    if (!n)
      return error(key + " = '" + value +
                   "' is not a count; expected a positive whole number");
    if (*n > max)
      return error(key + " = " + value + " is more than " + llvm::Twine(max) +
                   ", the most a CUDA thread can address");
    noteChange(field, *n, false);
    field = *n;
    return llvm::Error::success();
  };

  if (t.isCpu()) {
    CpuTarget &c = std::get<CpuTarget>(t.device);
    if (key == "cores")
      return setCount(c.cores);
    if (key == "l1d")
      return setSize(c.l1dBytes);
    if (key == "l2")
      return setSize(c.l2Bytes);
    if (key == "l3")
      return setSize(c.l3Bytes);
    return error("unknown key '" + key +
                 "'; CPU targets accept cores, l1d, l2 and l3");
  }
  CudaTarget &g = std::get<CudaTarget>(t.device);
  if (key == "smem")
    return setSize(g.sharedMemPerBlockBytes);
  if (key == "regs")
    return setCount(g.registersPerThread, kMaxCudaRegisters);
  if (key == "sm_count")
    return setCount(g.smCount);
  return error("unknown key '" + key +
               "'; CUDA targets accept smem, regs and sm_count");
}

//===----------------------------------------------------------------------===//
// Host detection
//===----------------------------------------------------------------------===//

std::optional<std::string> readSmallFile(const llvm::Twine &path) {
  // sysfs files report a size of 4096 whatever they hold: read to EOF.
  auto buffer = llvm::MemoryBuffer::getFileAsStream(path);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().trim().str();
}

/// sysfs writes cache sizes as "48K", "2048K" or "32M".
std::optional<uint64_t> parseSysfsSize(StringRef text) {
  uint64_t unit = 1;
  if (text.consume_back("K"))
    unit = kKiB;
  else if (text.consume_back("M"))
    unit = kMiB;
  else if (text.consume_back("G"))
    unit = kGiB;
  uint64_t n;
  if (text.getAsInteger(10, n) || n == 0)
    return std::nullopt;
  return n * unit;
}

/// Fills the cache sizes of `c` from a sysfs cache directory; levels it does
/// not find keep the portable defaults and are named in `notes`.
void readCaches(StringRef cacheDir, CpuTarget &c,
                std::vector<std::string> &notes) {
  std::optional<uint64_t> l1d, l2, l3;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cacheDir, ec), end;
       !ec && it != end; it.increment(ec)) {
    StringRef index = llvm::sys::path::filename(it->path());
    if (!index.starts_with("index"))
      continue;
    auto level = readSmallFile(it->path() + "/level");
    auto type = readSmallFile(it->path() + "/type");
    auto sizeText = readSmallFile(it->path() + "/size");
    if (!level || !type || !sizeText)
      continue;
    std::optional<uint64_t> size = parseSysfsSize(*sizeText);
    if (!size || *type == "Instruction")
      continue;
    std::optional<uint64_t> *slot = *level == "1"   ? &l1d
                                    : *level == "2" ? &l2
                                    : *level == "3" ? &l3
                                                    : nullptr;
    if (slot && !*slot)
      *slot = size;
  }
  const CpuTarget defaults = namedCpuTarget(CpuIsa::Portable);
  auto take = [&](std::optional<uint64_t> found, uint64_t &field,
                  uint64_t fallback, StringRef what) {
    field = found.value_or(fallback);
    if (!found)
      notes.push_back(what.str() + " size not found in " + cacheDir.str() +
                      "; using portable's " + formatSize(fallback, " "));
  };
  take(l1d, c.l1dBytes, defaults.l1dBytes, "L1d");
  take(l2, c.l2Bytes, defaults.l2Bytes, "L2");
  take(l3, c.l3Bytes, defaults.l3Bytes, "L3");
}

void printCpu(llvm::raw_ostream &os, const CpuTarget &c) {
  os << "  isa       " << isaName(c.isa);
  const char *separator = ": ";
  for (auto [flag, name] :
       {std::pair{c.fma, "fma"}, std::pair{c.f16c, "f16c"},
        std::pair{c.avx512bf16, "avx512bf16"},
        std::pair{c.avx512vnni, "avx512vnni"}, std::pair{c.avxvnni, "avxvnni"},
        std::pair{c.amxBf16, "amx-bf16"}, std::pair{c.amxInt8, "amx-int8"}})
    if (flag) {
      os << separator << name;
      separator = " ";
    }
  os << "\n";
  os << "  vectors   " << c.vectorBits << " bits (" << c.vectorFloats()
     << " floats)\n";
  os << "  cores     " << c.cores << "\n";
  os << "  L1d       " << formatSize(c.l1dBytes, " ") << " per core\n";
  os << "  L2        " << formatSize(c.l2Bytes, " ") << " per core\n";
  os << "  L3        " << formatSize(c.l3Bytes, " ") << " shared\n";
}

void printCuda(llvm::raw_ostream &os, const CudaTarget &g) {
  os << "  arch      sm_" << g.smMajor << g.smMinor << " (compute capability "
     << g.smMajor << "." << g.smMinor << ")\n";
  os << "  SMs       " << g.smCount << "\n";
  os << "  smem      " << formatSize(g.sharedMemPerBlockBytes, " ")
     << " per block (opt-in maximum)\n";
  os << "  registers " << g.registersPerThread << " per thread, "
     << g.registersPerSM << " per SM\n";
  os << "  warp      " << g.warpSize << " threads\n";
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

bool kiln::target::operator==(const CpuTarget &a, const CpuTarget &b) {
  return a.isa == b.isa && a.fma == b.fma && a.f16c == b.f16c &&
         a.avx512bf16 == b.avx512bf16 && a.avx512vnni == b.avx512vnni &&
         a.avxvnni == b.avxvnni && a.amxBf16 == b.amxBf16 &&
         a.amxInt8 == b.amxInt8 && a.vectorBits == b.vectorBits &&
         a.cores == b.cores && a.l1dBytes == b.l1dBytes &&
         a.l2Bytes == b.l2Bytes && a.l3Bytes == b.l3Bytes;
}

bool kiln::target::operator==(const CudaTarget &a, const CudaTarget &b) {
  return a.smMajor == b.smMajor && a.smMinor == b.smMinor &&
         a.sharedMemPerBlockBytes == b.sharedMemPerBlockBytes &&
         a.registersPerThread == b.registersPerThread &&
         a.registersPerSM == b.registersPerSM && a.warpSize == b.warpSize &&
         a.smCount == b.smCount;
}

bool kiln::target::operator==(const TargetDescription &a,
                              const TargetDescription &b) {
  return a.name == b.name && a.device == b.device;
}

std::string TargetDescription::spec() const {
  if (isCpu()) {
    const CpuTarget &c = cpu();
    return name + ",cores=" + std::to_string(c.cores) +
           ",l1d=" + formatSize(c.l1dBytes) + ",l2=" + formatSize(c.l2Bytes) +
           ",l3=" + formatSize(c.l3Bytes);
  }
  const CudaTarget &g = cuda();
  return name + ",smem=" + formatSize(g.sharedMemPerBlockBytes) +
         ",regs=" + std::to_string(g.registersPerThread) +
         ",sm_count=" + std::to_string(g.smCount);
}

llvm::Expected<TargetDescription> kiln::target::parseTarget(StringRef spec) {
  SpecError error{spec};
  StringRef trimmed = spec.trim();
  auto [head, overrides] = trimmed.split(',');
  if (head.empty())
    return error(llvm::Twine("no target name; expected ") + kAcceptedNames);

  llvm::Expected<TargetDescription> t = head.consume_front("cuda:")
                                            ? parseCudaHead(head, error)
                                            : parseCpuHead(head, error);
  // "avx2," has an empty override, which is an error, not none.
  if (!t || !trimmed.contains(','))
    return t;

  llvm::StringSet<> seen;
  llvm::SmallVector<StringRef> items;
  overrides.split(items, ',');
  for (StringRef item : items) {
    auto [key, value] = item.trim().split('=');
    if (key.empty() || value.empty())
      return error("override '" + item + "' is not key=value");
    if (!seen.insert(key).second)
      return error("'" + key + "' is given twice");
    if (llvm::Error e = applyOverride(*t, key, value, error))
      return std::move(e);
  }
  return t;
}

TargetDescription
kiln::target::describeHostCpu(const llvm::StringMap<bool> &features,
                              StringRef cacheDir, unsigned cores,
                              StringRef cpuName) {
  auto has = [&](StringRef feature) { return features.lookup(feature); };
  // AVX2 code uses FMA for every multiply-add and F16C to widen f16 weights;
  // every AVX2 part ever sold has both, so a host missing one is treated as
  // not really AVX2 (some hypervisors hide features one by one).
  bool avx2 = has("avx2") && has("fma") && has("f16c");
  bool avx512 = avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") &&
                has("avx512dq");

  CpuTarget c;
  c.isa = avx512 ? CpuIsa::AVX512 : avx2 ? CpuIsa::AVX2 : CpuIsa::Portable;
  c.fma = has("fma");
  c.f16c = has("f16c");
  c.avx512bf16 = avx512 && has("avx512bf16");
  c.avx512vnni = avx512 && has("avx512vnni");
  c.avxvnni = avx2 && has("avxvnni");
  // LLVM reports AMX only where XCR0 has the tile state; the runtime asks
  // Linux for it (runtime/CpuFeatures.cpp) before it runs tile code.
  c.amxBf16 = avx512 && has("amx-tile") && has("amx-bf16");
  c.amxInt8 = avx512 && has("amx-tile") && has("amx-int8");
  c.vectorBits = vectorBitsOf(c.isa);
  c.cores = std::max(cores, 1u);

  TargetDescription t;
  readCaches(cacheDir, c, t.notes);
  t.device = c;
  t.name = canonicalCpuName(c);
  t.origin = ("this machine (" + cpuName + ")").str();
  return t;
}

TargetDescription kiln::target::detectHostCpu() {
  int cores = llvm::get_physical_cores();
  if (cores <= 0)
    cores = static_cast<int>(std::thread::hardware_concurrency());
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  TargetDescription t =
      describeHostCpu(features, "/sys/devices/system/cpu/cpu0/cache",
                      std::max(cores, 1), llvm::sys::getHostCPUName());
  if (cores <= 0)
    t.notes.push_back("the OS did not report the core count; assuming 1");
  return t;
}

std::vector<std::string> kiln::target::namedTargets() {
  std::vector<std::string> names = {"portable", "avx2", "avx512",
                                    "avx512+bf16+vnni"};
  for (const NamedGpu &g : kNamedGpus)
    names.push_back(std::string("cuda:") + g.arch);
  return names;
}

std::string kiln::target::summarizeTarget(const TargetDescription &t) {
  std::string line;
  if (t.isCpu()) {
    const CpuTarget &c = t.cpu();
    line = std::to_string(c.vectorBits) + "-bit vectors, " +
           std::to_string(c.cores) + " cores, L1d " +
           formatSize(c.l1dBytes, " ") + ", L2 " + formatSize(c.l2Bytes, " ") +
           ", L3 " + formatSize(c.l3Bytes, " ");
  } else {
    const CudaTarget &g = t.cuda();
    line = std::to_string(g.smCount) + " SMs, " +
           formatSize(g.sharedMemPerBlockBytes, " ") + " smem/block, " +
           std::to_string(g.registersPerThread) + " regs/thread";
  }
  return line + "; " + t.origin;
}

void kiln::target::printTarget(llvm::raw_ostream &os,
                               const TargetDescription &t) {
  os << "target " << t.name << "\n";
  os << "  origin    " << t.origin << "\n";
  if (t.isCpu())
    printCpu(os, t.cpu());
  else
    printCuda(os, t.cuda());
  for (const std::string &note : t.notes)
    os << "  note      " << note << "\n";
  os << "  spec      " << t.spec() << "\n";
}
