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
  # nvcc compiles the .cu files' host code with the build's C++ compiler, so one compiler's
  # sanitizer and coverage instrumentation runs through the whole binary (the clang fuzz/CI
  # build passes -fsanitize=fuzzer-no-link, which gcc, nvcc's default, does not know).
  if(NOT CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  # One CUDA runtime per process: the .cu objects would otherwise pull in cudart_static beside
  # the shared CUDA::cudart that cuBLAS and CUPTI use.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  # CMake 3.25 (Debian 12) knows no CUDA20 flags for nvcc; the .cu files need only C++17.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  # cuBLAS is opened at run time, not linked (runtime/cuda/cublas_library.h): by this soname.
  set(MEMPLAN_CUBLAS_SONAME "libcublas.so.${CUDAToolkit_VERSION_MAJOR}")
  message(STATUS "memplan: CUDA ${CUDAToolkit_VERSION} found - building the CUDA backend and profiler")
endif()
