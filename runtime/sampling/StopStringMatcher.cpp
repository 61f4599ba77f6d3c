//===- StopStringMatcher.cpp - Holding back what may be a stop string -----===//
//
// Part of Kiln. Only the held tail needs searching: text shown earlier was
// shown because no stop string could start in it, and the held tail is
// never longer than the longest stop string plus the latest text.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/StopStringMatcher.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kiln::runtime {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stopStrings)
    : stopStrings(std::move(stopStrings)) {
  for (size_t i = 0; i < this->stopStrings.size(); ++i)
    if (this->stopStrings[i].empty())
      throw std::invalid_argument("stop string " + std::to_string(i) +
                                  " is empty; it would match before any text");
}

StopStringMatcher::Result StopStringMatcher::push(std::string_view text) {
  held.append(text);
  Result result;

  size_t earliest = std::string::npos;
  for (size_t i = 0; i < stopStrings.size(); ++i) {
    size_t at = held.find(stopStrings[i]);
    if (at < earliest) {
      earliest = at;
      result.matched = static_cast<int32_t>(i);
    }
  }
  if (result.matched >= 0) {
    result.text = held.substr(0, earliest);
    held.clear();
    return result;
  }

  size_t keep = 0;
  for (const std::string &stop : stopStrings)
    for (size_t length = std::min(stop.size() - 1, held.size()); length > keep;
         --length)
      if (held.compare(held.size() - length, length, stop, 0, length) == 0) {
        keep = length;
        break;
      }
  result.text = held.substr(0, held.size() - keep);
  held.erase(0, held.size() - keep);
  return result;
}

std::string StopStringMatcher::finish() { return std::exchange(held, {}); }

} // namespace kiln::runtime
