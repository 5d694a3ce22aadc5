// jemalloc's configuration, read when the allocator starts (compiled into the memplan CLI only
// when it links jemalloc: cmake/Jemalloc.cmake).
//
// Never purge freed pages during a run. `verify` frees and reallocates each step's activations
// and gradients (tens to hundreds of MiB); with jemalloc's default decay (10 s) its background
// purging handed them back to the kernel and the next step faulted them in again: ResNet-18
// `verify --batch 4` spent 1.4 s in the kernel instead of 0.4 s (docs/measurements.md). The
// same reason runtime/allocator.cc raises glibc's trim threshold; a CLI run is short, so the
// pages go back when it exits.
//
// Back the heap and jemalloc's own metadata with transparent huge pages (jemalloc madvises its
// extents; a kernel set to THP "madvise", Debian's default, then maps 2 MiB pages, and "never"
// makes this a no-op). An analysis of a large graph walks hundreds of MiB of small objects
// (derived steps, buffers, allocator-replay blocks) in no cache-friendly order, so 4 KiB pages
// spent much of its time in TLB misses: `analyze` on the 50,000-node chain took 20-25% less CPU
// time with it, alternated runs on this 2-core VM (docs/measurements.md, session 25).
extern "C" {
// NOLINTNEXTLINE: the name and type jemalloc looks up (its documented configuration symbol).
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1,thp:always,metadata_thp:always";
}
