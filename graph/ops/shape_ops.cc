#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"

namespace memplan {

void RegisterShapeOps(OpRegistry& registry) { (void)registry; }

}  // namespace memplan
