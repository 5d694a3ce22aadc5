# The CUDA parts (runtime/cuda, profiler/cupti) are optional: on when the toolkit is found.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  option(MEMPLAN_CUDA "Build the CUDA backend and the CUPTI profiler" ON)
else()
  set(MEMPLAN_CUDA OFF CACHE BOOL "Build the CUDA backend and the CUPTI profiler" FORCE)
  message(STATUS "memplan: CUDA Toolkit not found - building without the CUDA backend and profiler")
endif()
if(MEMPLAN_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS "${CUDAToolkit_BIN_DIR}/nvcc")
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_BIN_DIR}/nvcc")
  endif()
  # One CUDA runtime per process: the .cu objects would otherwise pull in cudart_static beside
  # the shared CUDA::cudart that cuBLAS and CUPTI use.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  # The .cu files include graph/ headers written in C++20 (defaulted operator<=>). CMake 3.25
  # (Debian 12) has no CUDA20 standard flag for nvcc, so the flag is given directly.
  string(APPEND CMAKE_CUDA_FLAGS " -std=c++20")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  message(STATUS "memplan: CUDA ${CUDAToolkit_VERSION} found - building the CUDA backend and profiler")
endif()
