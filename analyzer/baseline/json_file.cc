#include "analyzer/baseline/json_file.h"

#include <fstream>
#include <sstream>

namespace memplan {

Expected<std::string> ReadTextFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return MakeError("cannot read " + path.string());
  return text.str();
}

Expected<nlohmann::json> ReadJsonFile(const std::filesystem::path& path) {
  MEMPLAN_TRY(std::string text, ReadTextFile(path));
  // nlohmann reports syntax errors only by exception; it is caught here, at the library
  // boundary, and never escapes as one.
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return MakeError(path.string() + " is not valid JSON: " + e.what());
  }
}

}  // namespace memplan
