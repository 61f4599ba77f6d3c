//===- MemoryAmount.h - Memory budgets as bytes or a share ------*- C++ -*-===//
//
// Part of Kiln. How users size memory pools (`kiln run --kv-memory`, `kiln
// bench --kv-memory`): a byte count with an optional binary or decimal unit
// ("2GiB", "512MiB", "1.5GB", "1048576"), or a percentage of the memory
// available when the pool is made ("40%": of MemAvailable in /proc/meminfo,
// which counts reclaimable page cache, so mapped weights that are not yet
// resident do not shrink it).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MEMORYAMOUNT_H
#define KILN_RUNTIME_MEMORYAMOUNT_H

#include <cstdint>
#include <string>

namespace kiln::runtime {

struct MemoryAmount {
  int64_t bytes = 0;    ///< a fixed amount, when percent is 0
  double percent = 0.0; ///< a share of the available memory, in (0, 100]

  /// Parses "2GiB", "512 MiB", "1.5GB", "4096", "40%". Throws
  /// std::invalid_argument naming the text and what was expected.
  static MemoryAmount parse(const std::string &text);

  /// The bytes this amount stands for, given `availableBytes`.
  int64_t resolve(int64_t availableBytes) const;
  /// The bytes this amount stands for on this machine now (reads
  /// /proc/meminfo only for a percentage).
  int64_t resolve() const;
};

/// MemAvailable from /proc/meminfo, in bytes. Throws std::runtime_error
/// when it cannot be read.
int64_t availableMemoryBytes();

} // namespace kiln::runtime

#endif // KILN_RUNTIME_MEMORYAMOUNT_H
