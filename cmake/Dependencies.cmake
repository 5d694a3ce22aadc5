# All dependencies come from Debian 12 packages; tools/setup.sh installs them.
find_package(Boost 1.74 REQUIRED COMPONENTS graph)
find_package(ONNX REQUIRED)          # libonnx-dev: targets onnx, onnx_proto
find_package(Protobuf REQUIRED)      # libprotobuf-dev
find_package(CLI11 REQUIRED)         # libcli11-dev
find_package(nlohmann_json 3.11 REQUIRED)
find_package(yaml-cpp 0.7 REQUIRED)  # libyaml-cpp-dev: the YAML configs the exports write
find_package(pugixml 1.13 REQUIRED)  # libpugixml-dev: the JUnit XML `memplan check` writes
find_package(Threads REQUIRED)
# libopenblas-dev: the CPU kernels' GEMM (cblas_sgemm, openblas_set_num_threads). Debian installs
# OpenBLASConfig.cmake (OpenBLAS_INCLUDE_DIRS, OpenBLAS_LIBRARIES) for the variant chosen by
# update-alternatives (pthread by default).
find_package(OpenBLAS CONFIG REQUIRED)
if(MEMPLAN_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED) # catch2 (v2 single header + Catch.cmake)
  include(Catch)
endif()
find_package(Python3 COMPONENTS Interpreter)
