#pragma once
// The zoo's catalogue: every architecture memplan-zoo can write, with the parameter count its
// reference implementation publishes (sum of p.numel() over model.parameters()).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/zoo/model_builder.h"

namespace memplan::zoo {

struct ZooModel {
  std::string name;              // file stem: <name>.onnx
  int64_t published_parameters;  // trainable elements; BatchNorm running stats excluded
  std::function<void(ModelBuilder&)> build;
};

// One builder per architecture file.
void BuildMlp(ModelBuilder& builder);
void BuildResNet18(ModelBuilder& builder);
void BuildResNet50(ModelBuilder& builder);
void BuildBertBase(ModelBuilder& builder);
void BuildGpt2Small(ModelBuilder& builder);
void BuildGpt2Xl(ModelBuilder& builder);
void BuildVitB16(ModelBuilder& builder);
void BuildLlama3_8b(ModelBuilder& builder);
void BuildMistral7b(ModelBuilder& builder);

// In the order the CLI writes them.
const std::vector<ZooModel>& AllZooModels();

}  // namespace memplan::zoo
