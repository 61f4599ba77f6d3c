//===- HugePageBuffer.h - Memory in transparent huge pages ------*- C++ -*-===//
//
// Part of Kiln's runtime. Memory that streams at the machine's read
// bandwidth: anonymous, in whole 2 MiB pages, advised into transparent huge
// pages. A file mapping (the artifact's weights) is in 4 KiB pages, where a
// decode loop pays a TLB miss and a restart of the hardware prefetcher every
// 4 KiB; the read probe and the weights a model copies out of its artifact
// live here instead (bench/NOTES.md, v17).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_HUGEPAGEBUFFER_H
#define KILN_RUNTIME_HUGEPAGEBUFFER_H

#include <cstdint>

namespace kiln::runtime {

constexpr int64_t kHugePageBytes = 2 * 1024 * 1024;

/// Whether the kernel backs `madvise(MADV_HUGEPAGE)` regions with
/// transparent huge pages: its policy is `always` or `madvise`, not `never`
/// (/sys/kernel/mm/transparent_hugepage/enabled).
bool transparentHugePagesOnAdvice();

/// Anonymous memory rounded up to whole 2 MiB pages, 2 MiB aligned, advised
/// to be backed by transparent huge pages. Where the kernel's policy does
/// not allow them, 4 KiB pages remain and hugePages() says so. The memory
/// is zero; `populate` faults every page in now (a write to each) rather
/// than on first use, so that no later first touch pays for zeroing a 2 MiB
/// page. Throws std::bad_alloc when the memory cannot be mapped.
class HugePageBuffer {
public:
  explicit HugePageBuffer(int64_t bytes, bool populate = false);
  ~HugePageBuffer();
  HugePageBuffer(const HugePageBuffer &) = delete;
  HugePageBuffer &operator=(const HugePageBuffer &) = delete;

  unsigned char *data() const { return bytes; }
  /// Bytes mapped: the request rounded up to whole 2 MiB pages.
  int64_t size() const { return length; }
  /// The advice was taken and the kernel's policy allows huge pages.
  bool hugePages() const { return huge; }

private:
  unsigned char *bytes = nullptr;
  int64_t length = 0;
  bool huge = false;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_HUGEPAGEBUFFER_H
