#pragma once
// Which import fusions a plan assumes (`--fusions`): the names of graph/fusion/fusion_set.h's
// FusionSet, whose table is graph/fusion/fusion_table.h.

#include <string_view>

#include "analyzer/vocabulary/name_table.h"
#include "graph/fusion/fusion_set.h"

namespace memplan {

inline constexpr NameTable<FusionSet, 4> kFusionSetNames = {{
    {FusionSet::kFusedOps, "ops"},
    {FusionSet::kAll, "all"},
    {FusionSet::kLiger, "liger"},
    {FusionSet::kNone, "none"},
}};

inline std::string_view FusionSetName(FusionSet set) { return NameOf(kFusionSetNames, set); }

}  // namespace memplan
