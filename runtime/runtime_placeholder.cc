// Placeholder so memplan_runtime has a source until the executor lands; the runtime helper removes it.
namespace memplan {}
