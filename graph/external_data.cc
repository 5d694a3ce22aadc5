#include "graph/external_data.h"

#include <cctype>

namespace memplan {
namespace {

bool IsSeparator(char c) { return c == '/' || c == '\\'; }

// `C:` or `C:\...`: a Windows drive path is absolute in the file's producer's eyes.
bool HasDriveLetter(const std::string& path) {
  return path.size() >= 2 && std::isalpha(static_cast<unsigned char>(path[0])) && path[1] == ':';
}

}  // namespace

Status ValidateExternalDataLocation(const std::string& tensor_name, const std::string& location) {
  auto reject = [&](const std::string& why) {
    return MakeError("initializer '" + tensor_name + "': external data location '" + location +
                     "' " + why);
  };
  if (location.empty()) return reject("is empty");
  if (location.find('\0') != std::string::npos) return reject("contains a NUL byte");
  if (IsSeparator(location[0]) || HasDriveLetter(location)) {
    return reject("is an absolute path; it must be relative to the model's folder");
  }
  // Walk the components, tracking the depth below the model's folder; going above it escapes.
  int64_t depth = 0;
  size_t begin = 0;
  while (begin <= location.size()) {
    size_t end = begin;
    while (end < location.size() && !IsSeparator(location[end])) ++end;
    std::string component = location.substr(begin, end - begin);
    if (component == "..") {
      if (--depth < 0) return reject("escapes the model's folder");
    } else if (!component.empty() && component != ".") {
      ++depth;
    }
    begin = end + 1;
  }
  if (depth == 0) return reject("names the model's folder itself, not a file");
  return OkStatus();
}

}  // namespace memplan
