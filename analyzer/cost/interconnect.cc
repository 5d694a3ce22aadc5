#include "analyzer/cost/interconnect.h"

#include <array>

namespace memplan {
namespace {

constexpr double kGB = 1e9;

// Per GPU and direction. NVLink: total bidirectional bandwidth per GPU / 2 (V100 300 GB/s,
// A100 600 GB/s, H100 900 GB/s). PCIe x16: 8 GT/s (gen 3), 16 GT/s (gen 4) and 32 GT/s (gen 5)
// x 16 lanes, 128b/130b coding = 15.75, 31.5 and 63 GB/s. Network links: line rate / 8 (HDR 200
// Gb/s, NDR 400 Gb/s, 100 GbE RoCE). Latencies: NCCL's per-step ring latency is a few microseconds
// inside a node and about ten across the network.
constexpr std::array<Interconnect, 9> kInterconnects = {{
    {"nvlink2", "NVLink 2 (V100 SXM2)", 150 * kGB, 5e-6},
    {"nvlink3", "NVLink 3 (A100 SXM, NVSwitch)", 300 * kGB, 5e-6},
    {"nvlink4", "NVLink 4 (H100/H200 SXM, NVSwitch)", 450 * kGB, 5e-6},
    {"pcie3", "PCIe 3.0 x16", 15.75 * kGB, 8e-6},
    {"pcie4", "PCIe 4.0 x16", 31.5 * kGB, 8e-6},
    {"pcie5", "PCIe 5.0 x16", 63 * kGB, 8e-6},
    {"roce-100g", "RoCE 100 GbE, one adapter per GPU", 12.5 * kGB, 1e-5},
    {"ib-hdr", "InfiniBand HDR 200 Gb/s, one adapter per GPU", 25 * kGB, 1e-5},
    {"ib-ndr", "InfiniBand NDR 400 Gb/s, one adapter per GPU", 50 * kGB, 1e-5},
}};

const Interconnect& Named(std::string_view name) {
  for (const Interconnect& link : kInterconnects)
    if (link.name == name) return link;
  MEMPLAN_UNREACHABLE("a default link missing from the table");
  return kInterconnects[0];
}

}  // namespace

std::span<const Interconnect> KnownInterconnects() { return kInterconnects; }

Expected<Interconnect> FindInterconnect(std::string_view name) {
  std::string known;
  for (const Interconnect& link : kInterconnects) {
    if (link.name == name) return link;
    known += (known.empty() ? "" : ", ") + std::string(link.name);
  }
  return MakeError("unknown interconnect '" + std::string(name) + "' (known: " + known + ")");
}

Interconnect DefaultIntraNodeLink(const GpuSpec& gpu) {
  const std::string_view name = gpu.name;
  auto starts = [&](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  // PCIe variants of datacenter parts have no NVSwitch.
  if (name.find("PCIE") != std::string_view::npos || name.find("PCIe") != std::string_view::npos)
    return Named(starts("H100") ? "pcie5" : "pcie4");
  if (starts("H100") || starts("H200") || starts("GH200")) return Named("nvlink4");
  if (starts("A100")) return Named("nvlink3");
  if (starts("V100")) return Named("nvlink2");
  return Named("pcie4");
}

Interconnect DefaultInterNodeLink() { return Named("ib-hdr"); }

Interconnect DefaultHostLink(const GpuSpec& gpu) {
  const std::string_view name = gpu.name;
  auto starts = [&](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  // The host interface of each part in the GPU table (NVIDIA datasheets): Hopper SXM and PCIe
  // parts are PCIe 5.0 x16; Volta SXM2 and the Turing T4 PCIe 3.0 x16; Ampere and Ada (A100,
  // A10, A6000, L4, RTX 3090/4090) PCIe 4.0 x16, as is a generic GPU known only by its size.
  if (starts("H100") || starts("H200") || starts("GH200")) return Named("pcie5");
  if (!gpu.is_generic && (starts("V100") || starts("T4"))) return Named("pcie3");
  return Named("pcie4");
}

}  // namespace memplan
