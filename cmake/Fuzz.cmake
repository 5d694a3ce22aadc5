# MEMPLAN_FUZZ: libFuzzer targets under tests/fuzz (clang only). Everything is compiled with the
# fuzzer's coverage instrumentation and ASan/UBSan (UB aborts, so UBSan findings are crashes too).
option(MEMPLAN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang, ASan, UBSan)" OFF)
if(MEMPLAN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMPLAN_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++); "
                        "found ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
