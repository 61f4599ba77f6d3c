//===- HugePageBuffer.cpp - Anonymous memory in transparent huge pages ----===//
//
// Part of Kiln's runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/HugePageBuffer.h"

#include <fstream>
#include <new>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace kiln::runtime {

bool transparentHugePagesOnAdvice() {
  std::ifstream policy("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(policy, text);
  return text.find("[always]") != std::string::npos ||
         text.find("[madvise]") != std::string::npos;
}

HugePageBuffer::HugePageBuffer(int64_t request, bool populate)
    : length((request + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes) {
  if (length == 0)
    length = kHugePageBytes;
  // Map one huge page more than needed and trim to a 2 MiB boundary: the
  // kernel places a huge page only where the range covers an aligned one.
  size_t mapped = size_t(length + kHugePageBytes);
  void *p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::bad_alloc();
  uintptr_t start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + uintptr_t(kHugePageBytes) - 1) /
                      uintptr_t(kHugePageBytes) * uintptr_t(kHugePageBytes);
  if (aligned > start)
    ::munmap(p, aligned - start);
  uintptr_t end = start + mapped, used = aligned + uintptr_t(length);
  if (end > used)
    ::munmap(reinterpret_cast<void *>(used), end - used);
  bytes = reinterpret_cast<unsigned char *>(aligned);
#ifdef MADV_HUGEPAGE
  huge = ::madvise(bytes, size_t(length), MADV_HUGEPAGE) == 0 &&
         transparentHugePagesOnAdvice();
#endif
  if (populate) {
    long page = ::sysconf(_SC_PAGESIZE);
    int64_t step = huge ? kHugePageBytes : int64_t(page > 0 ? page : 4096);
    for (int64_t at = 0; at < length; at += step)
      static_cast<volatile unsigned char *>(bytes)[at] = 0;
  }
}

HugePageBuffer::~HugePageBuffer() { ::munmap(bytes, size_t(length)); }

} // namespace kiln::runtime
