#pragma once
// Where the pipeline reports what it is doing ("importing model.onnx...", "planning..."): the
// CLI passes its terminal Progress (shown only on a terminal, never with --json), tests and
// library callers pass nothing.

#include <functional>
#include <string_view>

namespace memplan {

using ProgressSink = std::function<void(std::string_view)>;

// A sink that drops every message.
inline const ProgressSink& NoProgress() {
  static const ProgressSink kNone = [](std::string_view) {};
  return kNone;
}

}  // namespace memplan
