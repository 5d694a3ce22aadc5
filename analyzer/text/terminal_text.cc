#include "analyzer/text/terminal_text.h"

#include "graph/utf8_text.h"

namespace memplan {

std::string EscapeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const size_t n = Utf8SequenceLength(text, i);
    // A C1 control is the two bytes C2 80..C2 9F.
    const bool c1 = n == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    const bool c0 = n == 1 && (byte < 0x20 || byte == 0x7F) && byte != '\n' && byte != '\t';
    if (n == 0 || c0 || c1) {
      const size_t escaped = n == 0 ? 1 : n;
      for (size_t k = 0; k < escaped; ++k)
        out += HexByteEscape(static_cast<unsigned char>(text[i + k]));
      i += escaped;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace memplan
