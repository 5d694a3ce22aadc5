#include "graph/ops/aten_ops.h"

#include <array>
#include <iterator>

namespace memplan {
namespace {

using namespace std::string_view_literals;

// One row per ONNX op type: the op, then its ATen packets (at most four).
struct AtenRow {
  std::string_view onnx_op;
  std::array<std::string_view, 4> aten;
  size_t count;
};

constexpr AtenRow kRows[] = {
    {"Gemm"sv, {"aten.addmm"sv, "aten.mm"sv}, 2},
    {"MatMul"sv, {"aten.mm"sv, "aten.bmm"sv, "aten.addmm"sv}, 3},
    {"Conv"sv, {"aten.convolution"sv}, 1},
    {"ConvTranspose"sv, {"aten.convolution"sv}, 1},
    {"Add"sv, {"aten.add"sv}, 1},
    {"Sub"sv, {"aten.sub"sv}, 1},
    {"Mul"sv, {"aten.mul"sv}, 1},
    {"Div"sv, {"aten.div"sv}, 1},
    {"Pow"sv, {"aten.pow"sv}, 1},
    {"Sqrt"sv, {"aten.sqrt"sv}, 1},
    {"Exp"sv, {"aten.exp"sv}, 1},
    {"Erf"sv, {"aten.erf"sv}, 1},
    {"Relu"sv, {"aten.relu"sv}, 1},
    {"Gelu"sv, {"aten.gelu"sv}, 1},
    {"Sigmoid"sv, {"aten.sigmoid"sv}, 1},
    {"Tanh"sv, {"aten.tanh"sv}, 1},
    {"Softmax"sv, {"aten._softmax"sv}, 1},
    {"LogSoftmax"sv, {"aten._log_softmax"sv}, 1},
    {"LayerNormalization"sv, {"aten.native_layer_norm"sv}, 1},
    // torch >= 2.1 dispatches training batch norm as _native_batch_norm_legit; cuDNN's own op
    // where it takes the call.
    {"BatchNormalization"sv,
     {"aten._native_batch_norm_legit"sv, "aten.native_batch_norm"sv, "aten.cudnn_batch_norm"sv},
     3},
    {"Dropout"sv, {"aten.native_dropout"sv}, 1},
    {"MaxPool"sv, {"aten.max_pool2d_with_indices"sv}, 1},
    {"AveragePool"sv, {"aten.avg_pool2d"sv}, 1},
    {"GlobalAveragePool"sv, {"aten.mean"sv}, 1},
    {"ReduceMean"sv, {"aten.mean"sv}, 1},
    {"Where"sv, {"aten.where"sv}, 1},
    {"Equal"sv, {"aten.eq"sv}, 1},
    {"Cast"sv, {"aten._to_copy"sv}, 1},
    {"Concat"sv, {"aten.cat"sv}, 1},
    {"Transpose"sv, {"aten.transpose"sv, "aten.permute"sv, "aten.t"sv}, 3},
    {"Reshape"sv, {"aten.view"sv, "aten._unsafe_view"sv}, 2},
    {"Slice"sv, {"aten.slice"sv}, 1},
    {"Split"sv, {"aten.split"sv, "aten.split_with_sizes"sv}, 2},
    {"Gather"sv, {"aten.embedding"sv, "aten.index_select"sv}, 2},
};

constexpr auto kOpTypes = [] {
  std::array<std::string_view, std::size(kRows)> types{};
  for (size_t i = 0; i < std::size(kRows); ++i) types[i] = kRows[i].onnx_op;
  return types;
}();

}  // namespace

std::span<const std::string_view> AtenOpsOfOnnxOp(std::string_view onnx_op_type) {
  for (const AtenRow& row : kRows)
    if (row.onnx_op == onnx_op_type) return {row.aten.data(), row.count};
  return {};
}

std::span<const std::string_view> OnnxOpsWithAtenOps() { return kOpTypes; }

}  // namespace memplan
