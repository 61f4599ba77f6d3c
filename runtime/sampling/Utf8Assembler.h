//===- Utf8Assembler.h - Whole UTF-8 characters from a byte stream -*- C++ -*-//
//
// Part of Kiln. Tokens are byte strings: a byte-fallback token (<0xE2>) or
// a byte-level BPE token may hold part of a character, finished by the next
// token. The assembler passes on only whole characters, so a stream never
// shows half of one.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLING_UTF8ASSEMBLER_H
#define KILN_RUNTIME_SAMPLING_UTF8ASSEMBLER_H

#include <string>
#include <string_view>

namespace kiln::runtime {

/// Turns bytes arriving piece by piece into valid UTF-8: complete characters
/// pass, an incomplete one at the end waits for its next bytes, and bytes
/// that cannot be UTF-8 become U+FFFD, one per maximal ill-formed subpart
/// (Unicode 15, section 3.9; what WHATWG's decoder and Python's
/// errors="replace" do).
class Utf8Assembler {
public:
  /// Appends `bytes`; returns the text that is now complete.
  std::string push(std::string_view bytes);

  /// Ends the stream: an incomplete character left over becomes U+FFFD.
  std::string finish();

  /// Whether part of a character is waiting for its next bytes.
  bool holding() const { return !pending.empty(); }

private:
  std::string pending; ///< At most 3 bytes.
};

/// Whether `text` is well-formed UTF-8.
bool isValidUtf8(std::string_view text);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLING_UTF8ASSEMBLER_H
