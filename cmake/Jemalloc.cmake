# The memplan CLI allocates and frees millions of small objects per analysis (the derived
# program's steps and buffers, shape expressions, the import's protobuf messages); glibc's malloc
# spent about a fifth of `analyze` on a 50,000-node graph in its own bookkeeping
# (malloc_consolidate, unlink_chunk). jemalloc (Debian's libjemalloc-dev) takes a quarter off the
# whole run (docs/measurements.md). Not with the sanitizers (MEMPLAN_SANITIZE, or MEMPLAN_FUZZ,
# which compiles everything with ASan): ASan brings its own allocator.
option(MEMPLAN_JEMALLOC "Link the memplan CLI against jemalloc when it is installed" ON)

function(memplan_link_jemalloc target)
  if(NOT MEMPLAN_JEMALLOC OR MEMPLAN_SANITIZE OR MEMPLAN_FUZZ)
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(JEMALLOC QUIET IMPORTED_TARGET jemalloc)
  endif()
  if(NOT JEMALLOC_FOUND)
    message(STATUS "jemalloc not found: ${target} uses the C library's malloc (tools/setup.sh "
                   "installs libjemalloc-dev)")
    return()
  endif()
  target_link_libraries(${target} PRIVATE PkgConfig::JEMALLOC)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tools/jemalloc/malloc_conf.cc)
endfunction()
