// memplan-zoo: writes the zoo's training architectures as ONNX models.
//
//   memplan-zoo --out DIR [--model NAME]... [--with-weights]
//
// Without --with-weights every initializer is external data whose file is not written, so the
// models are small and carry only structure, which is all memplan's analysis reads. With it,
// models under kMaxParametersWithWeights also get "<model>.onnx.data" with seeded random values
// for the runtime. Exit codes: 0 success, 2 bad usage or a file that cannot be written.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/zoo/zoo_models.h"

namespace {

// Weight files above this many parameters (~200 MB of float32) are never written: the runtime
// only trains the small models, and the large ones would take gigabytes of disk.
constexpr int64_t kMaxParametersWithWeights = 50'000'000;

struct ZooOptions {
  std::string out_dir;
  std::vector<std::string> models;  // empty: all
  bool with_weights = false;
};

int Run(const ZooOptions& options) {
  using memplan::zoo::AllZooModels;
  std::set<std::string> known;
  std::string known_list;
  for (const auto& model : AllZooModels()) {
    known.insert(model.name);
    known_list += (known_list.empty() ? "" : ", ") + model.name;
  }
  for (const std::string& name : options.models) {
    if (!known.count(name)) {
      std::fprintf(stderr, "memplan-zoo: unknown model '%s' (known: %s)\n", name.c_str(),
                   known_list.c_str());
      return 2;
    }
  }
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) {
    std::fprintf(stderr, "memplan-zoo: cannot create '%s': %s\n", options.out_dir.c_str(),
                 error.message().c_str());
    return 2;
  }

  for (const auto& model : AllZooModels()) {
    if (!options.models.empty() && std::find(options.models.begin(), options.models.end(),
                                             model.name) == options.models.end()) {
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    memplan::zoo::ModelBuilder builder(model.name);
    model.build(builder);
    // The architecture files are written to reproduce the published counts; a mismatch is a bug.
    MEMPLAN_CHECK(builder.num_parameter_elements() == model.published_parameters);
    const bool weights =
        options.with_weights && model.published_parameters < kMaxParametersWithWeights;
    if (auto status = builder.Write(options.out_dir, weights); !status.ok()) {
      std::fprintf(stderr, "memplan-zoo: %s\n", status.error().message.c_str());
      return 2;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("wrote %s/%s.onnx: %lld parameters%s (%.2f s)\n", options.out_dir.c_str(),
                model.name.c_str(), static_cast<long long>(model.published_parameters),
                weights ? ", with weights" : "", seconds);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ZooOptions options;
  CLI::App app{"Writes memplan's model zoo (training architectures) as ONNX models."};
  app.add_option("--out", options.out_dir, "Directory to write <model>.onnx into")->required();
  app.add_option("--model", options.models,
                 "A model to write (repeatable; default all): mlp, resnet18, resnet50, "
                 "bert_base, gpt2_small, gpt2_xl, vit_b16, llama3_8b, mistral_7b");
  app.add_flag("--with-weights", options.with_weights,
               "Also write <model>.onnx.data with seeded random weights (models under 50M "
               "parameters)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return Run(options);
}
