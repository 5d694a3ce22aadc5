#include "tools/memplan/inspect_output.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analyzer/text/json_fields.h"
#include "analyzer/text/memory_size.h"

namespace memplan::cli {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr size_t kTextWidth = 80;

std::string DomainName(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

// 11689512 -> "11,689,512".
std::string WithThousands(int64_t n) {
  std::string digits = std::to_string(n);
  if (n < 0) digits.erase(0, 1);  // no negation: INT64_MIN has no positive counterpart
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string Join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

std::string DimsText(const TensorSummary& t) {
  if (!t.shape_known) return "(unknown shape)";
  return "[" + Join(t.dims, ", ") + "]";
}

// "[32, 3, 224, 224]" when the bound dims differ from the symbolic text (i.e. symbols were bound).
std::string BoundText(const TensorSummary& t) {
  if (!t.bound_dims) return "";
  std::vector<std::string> values;
  for (int64_t v : *t.bound_dims) values.push_back(std::to_string(v));
  if (values == t.dims) return "";
  return "[" + Join(values, ", ") + "]";
}

std::string SymbolValueText(const SymbolSummary& s) {
  if (s.value) return std::to_string(*s.value);
  return s.is_batch ? "unbound (--batch N)" : "unbound (--dim " + s.name + "=N)";
}

// Greedy word wrap: the first line after `first_prefix`, the rest after `rest_prefix`.
std::string Wrap(const std::string& text, const std::string& first_prefix,
                 const std::string& rest_prefix) {
  std::string out = first_prefix;
  size_t column = first_prefix.size();
  size_t pos = 0;
  bool line_empty = true;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!line_empty && column + 1 + word.size() > kTextWidth) {
      out += "\n" + rest_prefix;
      column = rest_prefix.size();
      line_empty = true;
    }
    if (!line_empty) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
    line_empty = false;
  }
  return out + "\n";
}

std::string Padded(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

OrderedJson TensorJson(const TensorSummary& t) {
  OrderedJson j;
  MEMPLAN_JSON_FIELDS(j, t, name, dtype, shape_known, dims);
  j["bound_dims"] = t.bound_dims ? OrderedJson(*t.bound_dims) : OrderedJson(nullptr);
  return j;
}

void AppendTensorLines(std::string& out, const std::vector<TensorSummary>& tensors) {
  size_t name_width = 0;
  for (const TensorSummary& t : tensors) name_width = std::max(name_width, t.name.size());
  name_width = std::min<size_t>(name_width, 24);
  for (const TensorSummary& t : tensors) {
    std::string type_and_dims = Padded(t.dtype, 8) + " " + DimsText(t);
    std::string line = "  " + Padded(t.name, name_width) + "  " + type_and_dims;
    // A long name (exports use paths like "/encoder/layer.11/...") gets a line of its own.
    if (line.size() > kTextWidth) line = "  " + t.name + "\n    " + type_and_dims;
    std::string bound = BoundText(t);
    if (!bound.empty()) {
      // Keep within 80 columns: the bound shape moves to its own line when it does not fit.
      size_t last_line =
          line.size() - (line.rfind('\n') == std::string::npos ? 0 : line.rfind('\n') + 1);
      if (last_line + 3 + bound.size() <= kTextWidth) {
        line += " = " + bound;
      } else {
        line += "\n    = " + bound;
      }
    }
    out += line + "\n";
  }
  if (tensors.empty()) out += "  (none)\n";
}

}  // namespace

std::string RenderInspectJson(const ModelSummary& s, const std::string& model_path) {
  OrderedJson j;
  j["schema"] = "memplan/1";
  j["command"] = "inspect";
  OrderedJson model;
  model["path"] = model_path;
  MEMPLAN_JSON_FIELDS(model, s, graph_name, producer_name, ir_version);
  OrderedJson opsets = OrderedJson::object();
  for (const auto& [domain, version] : s.opset_imports) opsets[DomainName(domain)] = version;
  model["opset_imports"] = opsets;
  j["model"] = model;
  MEMPLAN_JSON_FIELDS(j, s, node_count, parameter_count, parameter_bytes, buffer_count,
                      buffer_bytes);
  OrderedJson by_dtype = OrderedJson::object();
  for (const auto& [dtype, totals] : s.parameters_by_dtype)
    by_dtype[dtype] = OrderedJson{{"count", totals.count}, {"bytes", totals.bytes}};
  j["parameters_by_dtype"] = by_dtype;
  OrderedJson ops = OrderedJson::object();
  for (const auto& [op, count] : s.ops) ops[op] = count;
  j["ops"] = ops;
  j["inputs"] = OrderedJson::array();
  for (const TensorSummary& t : s.inputs) j["inputs"].push_back(TensorJson(t));
  j["outputs"] = OrderedJson::array();
  for (const TensorSummary& t : s.outputs) j["outputs"].push_back(TensorJson(t));
  j["symbols"] = OrderedJson::array();
  for (const SymbolSummary& sym : s.symbols) {
    OrderedJson o;
    MEMPLAN_JSON_FIELDS(o, sym, name, is_batch);
    o["value"] = sym.value ? OrderedJson(*sym.value) : OrderedJson(nullptr);
    j["symbols"].push_back(o);
  }
  MEMPLAN_JSON_FIELDS(j, s, unknown_ops, warnings);
  return j.dump(2) + "\n";
}

std::string RenderInspectText(const ModelSummary& s, const std::string& model_path) {
  std::string out;
  out += Wrap(model_path, "model       ", "            ");
  std::vector<std::string> about;
  if (!s.producer_name.empty()) about.push_back(s.producer_name);
  about.push_back("IR " + std::to_string(s.ir_version));
  for (const auto& [domain, version] : s.opset_imports)
    about.push_back("opset " + DomainName(domain) + " " + std::to_string(version));
  std::string graph_name = s.graph_name.empty() ? "(unnamed)" : s.graph_name;
  out += Wrap(graph_name + " (" + Join(about, ", ") + ")", "graph       ", "            ");
  out += "nodes       " + WithThousands(s.node_count) + "\n";
  out += "parameters  " + WithThousands(s.parameter_count) + " (" + FormatBytes(s.parameter_bytes) +
         ")\n";
  if (s.buffer_count > 0) {
    out += "buffers     " + WithThousands(s.buffer_count) + " (" + FormatBytes(s.buffer_bytes) +
           ", not trained: e.g. BatchNorm running statistics)\n";
  }
  if (s.parameters_by_dtype.size() > 1) {
    for (const auto& [dtype, totals] : s.parameters_by_dtype) {
      char line[96];
      std::snprintf(line, sizeof line, "  %-10s%16s  %s\n", dtype.c_str(),
                    WithThousands(totals.count).c_str(), FormatBytes(totals.bytes).c_str());
      out += line;
    }
  } else if (s.parameters_by_dtype.size() == 1) {
    out += "            all " + s.parameters_by_dtype.begin()->first + "\n";
  }

  out += "\ninputs\n";
  AppendTensorLines(out, s.inputs);
  out += "outputs\n";
  AppendTensorLines(out, s.outputs);

  out += "symbols\n";
  if (s.symbols.empty()) out += "  (none: every dimension is fixed)\n";
  for (const SymbolSummary& sym : s.symbols) {
    std::string label = sym.name + (sym.is_batch ? " (batch)" : "");
    out += "  " + Padded(label, 22) + " " + SymbolValueText(sym) + "\n";
  }

  out += "\nops (" + std::to_string(s.ops.size()) + " types)\n";
  // Two columns of "name count", 38 characters each.
  std::vector<std::string> cells;
  for (const auto& [op, count] : s.ops) {
    char cell[128];
    std::snprintf(cell, sizeof cell, "%-28s%8lld", op.c_str(), static_cast<long long>(count));
    cells.emplace_back(cell);
  }
  size_t rows = (cells.size() + 1) / 2;
  for (size_t r = 0; r < rows; ++r) {
    std::string line = "  " + cells[r];
    if (r + rows < cells.size()) line += "  " + cells[r + rows];
    out += line + "\n";
  }
  out += Wrap("unknown ops: " + (s.unknown_ops.empty() ? "none" : Join(s.unknown_ops, ", ")), "",
              "  ");

  if (!s.warnings.empty()) {
    out += "\nwarnings\n";
    for (const std::string& w : s.warnings) out += Wrap(w, "  - ", "    ");
  }
  return out;
}

std::string RenderInspectMarkdown(const ModelSummary& s, const std::string& model_path) {
  std::string out = "# memplan inspect: `" + model_path + "`\n\n";
  out += "| | |\n|---|---|\n";
  out += "| graph | " + (s.graph_name.empty() ? "(unnamed)" : s.graph_name) + " |\n";
  out += "| producer | " + s.producer_name + " |\n";
  out += "| nodes | " + WithThousands(s.node_count) + " |\n";
  out += "| parameters | " + WithThousands(s.parameter_count) + " (" +
         FormatBytes(s.parameter_bytes) + ") |\n";
  for (const auto& [dtype, totals] : s.parameters_by_dtype)
    out += "| parameters " + dtype + " | " + WithThousands(totals.count) + " (" +
           FormatBytes(totals.bytes) + ") |\n";

  auto tensors = [&](const char* title, const std::vector<TensorSummary>& list) {
    out +=
        std::string("\n## ") + title + "\n\n| name | dtype | dims | bound |\n|---|---|---|---|\n";
    for (const TensorSummary& t : list)
      out +=
          "| `" + t.name + "` | " + t.dtype + " | " + DimsText(t) + " | " + BoundText(t) + " |\n";
  };
  tensors("Inputs", s.inputs);
  tensors("Outputs", s.outputs);

  out += "\n## Symbols\n\n| name | value |\n|---|---|\n";
  if (s.symbols.empty()) out += "| (none) | every dimension is fixed |\n";
  for (const SymbolSummary& sym : s.symbols)
    out += "| `" + sym.name + "`" + (sym.is_batch ? " (batch)" : "") + " | " +
           SymbolValueText(sym) + " |\n";

  out += "\n## Ops\n\n| op | count |\n|---|---|\n";
  for (const auto& [op, count] : s.ops) out += "| " + op + " | " + std::to_string(count) + " |\n";
  out += "\nUnknown ops: " + (s.unknown_ops.empty() ? "none" : Join(s.unknown_ops, ", ")) + "\n";

  if (!s.warnings.empty()) {
    out += "\n## Warnings\n\n";
    for (const std::string& w : s.warnings) out += "- " + w + "\n";
  }
  return out;
}

}  // namespace memplan::cli
