#pragma once
// The links collectives run over: a small table of interconnects (bandwidth per GPU and direction,
// per-hop latency) and the defaults memplan assumes when the user names none. The cost of a
// collective over these links is analyzer/cost/collective_cost.h.
//
// Bandwidths are datasheet figures per GPU and direction (NVIDIA NVLink/NVSwitch and ConnectX
// product pages; PCIe x16 per the PCI-SIG generation); CollectiveCostOptions::bus_efficiency
// scales them to what NCCL reaches (nccl-tests reports 75-90% of these as "busbw").

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "analyzer/cost/gpu_specs.h"
#include "graph/expected.h"

namespace memplan {

struct Interconnect {
  std::string_view name;           // "nvlink4", "pcie4", "ib-ndr"
  std::string_view description;    // "NVLink 4 (H100 SXM, NVSwitch)"
  double bytes_per_second = 0;     // per GPU, per direction
  double hop_latency_seconds = 0;  // per ring step (NCCL's per-step latency, order of magnitude)
};

// Every known link, intra-node then inter-node.
std::span<const Interconnect> KnownInterconnects();

// The table entry named `name` (exact, lowercase). Errors list the known names.
Expected<Interconnect> FindInterconnect(std::string_view name);

// The link between GPUs of one node memplan assumes for `gpu`: NVLink of the generation the
// SXM part ships with (V100: 2, A100: 3, H100/H200: 4), PCIe 4 for every other GPU (consumer
// and PCIe cards, generic sizes).
Interconnect DefaultIntraNodeLink(const GpuSpec& gpu);

// The link between nodes memplan assumes: InfiniBand HDR (200 Gb/s), one adapter per GPU, as in
// DGX A100 class machines.
Interconnect DefaultInterNodeLink();

// The link between `gpu` and its host's memory, which --offload copies cross
// (analyzer/cost/offload_cost.h): the PCIe generation of the part's host interface (H100/H200:
// PCIe 5; V100, T4: PCIe 3; every other GPU and a generic size: PCIe 4), x16.
Interconnect DefaultHostLink(const GpuSpec& gpu);

}  // namespace memplan
