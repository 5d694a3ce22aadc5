# ccache keeps CI rebuilds and the sanitizer build cheap when it is installed. Paths are hashed
# relative to the source folder and the working directory is left out of the hash (the Debug build
# passes -g, and ccache would otherwise hash the build folder's absolute path), so a fresh clone in
# another folder - CI's clean checkout - reuses the objects an earlier build of the same sources made.
find_program(MEMPLAN_CCACHE ccache)
if(MEMPLAN_CCACHE)
  set(memplan_ccache_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
      CCACHE_NOHASHDIR=1 ${MEMPLAN_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${memplan_ccache_launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${memplan_ccache_launcher})
endif()
