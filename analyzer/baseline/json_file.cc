#include "analyzer/baseline/json_file.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace memplan {

Expected<std::string> ReadTextFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return MakeError("cannot read " + path.string());
  return text.str();
}

namespace {

// The dotted path of the value being parsed ("plan.recompute[2]"), kept from nlohmann's parse
// events so an error that carries no position in the document can name the field.
class JsonPathTracker {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
        frames_.push_back({/*array=*/false, "", 0});
        break;
      case Event::array_start:
        frames_.push_back({/*array=*/true, "", 0});
        break;
      case Event::key:
        if (!frames_.empty() && parsed.is_string()) frames_.back().key = parsed.get<std::string>();
        break;
      case Event::object_end:
      case Event::array_end:
        if (!frames_.empty()) frames_.pop_back();
        ValueDone();
        break;
      case Event::value:
        ValueDone();
        break;
    }
    return true;
  }

  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.array) {
        path += "[" + std::to_string(f.index) + "]";
      } else if (!f.key.empty()) {
        path += (path.empty() ? "" : ".") + f.key;
      }
    }
    return path;
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    size_t index;
  };
  void ValueDone() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::vector<Frame> frames_;
};

}  // namespace

Expected<nlohmann::json> ParseJsonText(const std::string& text, const std::string& source) {
  // nlohmann reports syntax errors and out-of-range numbers only by exception; they are caught
  // here, at the library boundary, and never escape as one.
  auto tracker = std::make_shared<JsonPathTracker>();
  try {
    return nlohmann::json::parse(
        text, [tracker](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          return (*tracker)(depth, event, parsed);
        });
  } catch (const nlohmann::json::parse_error& e) {
    return MakeError(source + " is not valid JSON: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // Number overflow (out_of_range.406): a literal such as 1e999 beyond a double.
    const std::string path = tracker->Path();
    return MakeError(source + ": " + (path.empty() ? std::string("a value") : "'" + path + "'") +
                     " is a number beyond the range of a double");
  }
}

Expected<nlohmann::json> ReadJsonFile(const std::filesystem::path& path) {
  MEMPLAN_TRY(std::string text, ReadTextFile(path));
  return ParseJsonText(text, path.string());
}

}  // namespace memplan
