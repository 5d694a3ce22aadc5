#pragma once
// Validation of ONNX external-data locations (TensorProto.external_data "location" entries).
// A model file is untrusted input: a location must name a file inside the model's folder, so a
// crafted model cannot make a tool that later loads weights read `/etc/passwd` or `../../secret`.
// memplan itself never reads weight bytes; it only checks the path, so an absent file is fine.

#include <string>

#include "graph/expected.h"

namespace memplan {

// OK when `location` is a relative path that stays inside the model's folder after lexical
// normalisation (`a/./b`, `a/../b` are fine; `../x`, `a/../../x`, `/abs`, `C:\x` are not).
// The error names the tensor and the location.
Status ValidateExternalDataLocation(const std::string& tensor_name, const std::string& location);

}  // namespace memplan
