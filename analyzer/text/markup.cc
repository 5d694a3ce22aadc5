#include "analyzer/text/markup.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace memplan {

std::string EscapeMarkup(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
  }
  return out;
}

std::string ReplaceChars(std::string_view text,
                         std::initializer_list<std::pair<char, std::string_view>> replacements) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto replaced = std::find_if(replacements.begin(), replacements.end(),
                                 [c](const auto& replacement) { return replacement.first == c; });
    if (replaced != replacements.end()) {
      out += replaced->second;
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatCoordinate(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  if (std::strcmp(buffer, "-0.0") == 0) return "0.0";
  return buffer;
}

Status WriteTextFile(const std::string& path, std::string_view content) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return MakeError("cannot write '" + path + "': " + std::strerror(errno));
  size_t written = std::fwrite(content.data(), 1, content.size(), file);
  int write_errno = errno;
  if (std::fclose(file) != 0 || written != content.size()) {
    return MakeError("cannot write '" + path +
                     "': " + std::strerror(written != content.size() ? write_errno : errno));
  }
  return OkStatus();
}

}  // namespace memplan
