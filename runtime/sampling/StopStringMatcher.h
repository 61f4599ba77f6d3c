//===- StopStringMatcher.h - Holding back what may be a stop string -*- C++
//-*-//
//
// Part of Kiln. A stop string may arrive split over several tokens ("\n\n"
// as "\n" then "\n", "###" as "#" then "##"). Text that could be the start
// of one is held back until the next text shows whether it is, so a stop
// string is never shown, and text that only looked like one is shown once
// it diverges.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLING_STOPSTRINGMATCHER_H
#define KILN_RUNTIME_SAMPLING_STOPSTRINGMATCHER_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

class StopStringMatcher {
public:
  /// Throws std::invalid_argument if one of `stopStrings` is empty.
  explicit StopStringMatcher(std::vector<std::string> stopStrings);

  struct Result {
    std::string text;     ///< Safe to show now.
    int32_t matched = -1; ///< Index of the stop string found, or -1.
  };

  /// Appends `text`. When a stop string is now complete, returns the text
  /// before the earliest one (the first listed among those starting there)
  /// and its index; whatever followed it is dropped. Otherwise returns all
  /// but the longest tail that is a proper prefix of some stop string.
  Result push(std::string_view text);

  /// The text held back, for when no more will come (it can no longer
  /// become a stop string).
  std::string finish();

private:
  std::vector<std::string> stopStrings;
  std::string held;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLING_STOPSTRINGMATCHER_H
