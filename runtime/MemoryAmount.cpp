//===- MemoryAmount.cpp - Memory budgets as bytes or a share --------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/MemoryAmount.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kiln::runtime {

namespace {

[[noreturn]] void refuse(const std::string &text, const std::string &why) {
  throw std::invalid_argument(
      "memory amount '" + text + "': " + why +
      " (expected bytes with an optional unit, e.g. 2GiB, 512MiB, 1.5GB, or "
      "a percentage of available memory, e.g. 40%)");
}

/// The multiplier of a unit, case-insensitive; 0 when unknown.
double unitBytes(std::string unit) {
  for (char &c : unit)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b")
    return 1;
  static const char *const kBinary[] = {"kib", "mib", "gib", "tib"};
  static const char *const kDecimal[] = {"kb", "mb", "gb", "tb"};
  static const char *const kShort[] = {"k", "m", "g", "t"};
  double binary = 1, decimal = 1;
  for (int i = 0; i < 4; ++i) {
    binary *= 1024;
    decimal *= 1000;
    if (unit == kBinary[i] || unit == kShort[i])
      return binary;
    if (unit == kDecimal[i])
      return decimal;
  }
  return 0;
}

} // namespace

MemoryAmount MemoryAmount::parse(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  if (begin == std::string::npos)
    refuse(text, "it is empty");
  std::string s = text.substr(begin, end - begin + 1);
  const char *start = s.c_str();
  char *stop = nullptr;
  double number = std::strtod(start, &stop);
  if (stop == start || !std::isfinite(number) || s[0] == '-' || s[0] == '+')
    refuse(text, "it does not start with a non-negative number");
  std::string unit(stop);
  unit.erase(0, unit.find_first_not_of(" \t"));
  MemoryAmount amount;
  if (unit == "%") {
    if (!(number > 0 && number <= 100))
      refuse(text, "a percentage must be above 0 and at most 100");
    amount.percent = number;
    return amount;
  }
  double scale = unitBytes(unit);
  if (scale == 0)
    refuse(text, "unknown unit '" + unit + "'");
  double bytes = number * scale;
  if (bytes >= 9.2e18)
    refuse(text, "it is too large");
  amount.bytes = int64_t(bytes);
  return amount;
}

int64_t MemoryAmount::resolve(int64_t availableBytes) const {
  if (percent <= 0)
    return bytes;
  return int64_t(double(availableBytes) * percent / 100.0);
}

int64_t MemoryAmount::resolve() const {
  return percent > 0 ? resolve(availableMemoryBytes()) : bytes;
}

int64_t availableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0)
      continue;
    std::istringstream in(line.substr(13));
    int64_t kib = -1;
    std::string unit;
    in >> kib >> unit;
    if (kib < 0 || unit != "kB")
      break;
    return kib * 1024;
  }
  throw std::runtime_error(
      "cannot read MemAvailable from /proc/meminfo to size a memory budget "
      "given as a percentage; give bytes instead (e.g. 2GiB)");
}

} // namespace kiln::runtime
