# ccache keeps CI rebuilds and the sanitizer build cheap when it is installed.
find_program(MEMPLAN_CCACHE ccache)
if(MEMPLAN_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${MEMPLAN_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${MEMPLAN_CCACHE})
endif()
