# Precompiled headers for the test binaries (option F2OBO_PCH).
#
# Most of a test source's compile is the third-party headers it shares with
# every other test source: GoogleTest/GoogleMock and Abseil for the core
# tests, plus gRPC, protobuf and the generated messages for the rest.
# Two headers are built, each once (the `f2obo_pch_<kind>` object
# libraries), and every test target of the kind includes it: their compile
# options agree with the owner's (GCC refuses a precompiled header whose
# options differ).  Measured: bench/RESULTS.md "Build and CI".
#
# Only third-party headers are precompiled, so a test's own includes still
# decide what it sees of this project.  Eigen is not among them: on GCC 12.0-
# 12.2 the header force-included into every target (top-level CMakeLists.txt)
# must include <immintrin.h> under its diagnostic pragma before Eigen does,
# and a precompiled header does not keep a diagnostic pragma (GCC bug 64117),
# so nothing in it may include <immintrin.h>.  A precompiled header is only
# used when it is included first, so its users take it as their first forced
# include, then that header (CMake's own REUSE_FROM would put it after).
#
# ccache caches a source compiled with a precompiled header only under
# sloppiness pch_defines,time_macros, so the default is ON only for builds
# without a compiler launcher (scripts/test.sh; CI starts with no cache).
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_f2obo_pch_default OFF)
else()
  set(_f2obo_pch_default ON)
endif()
option(F2OBO_PCH "Precompiled headers for the test binaries" ${_f2obo_pch_default})

set(F2OBO_PCH_CORE_HEADERS
  <algorithm> <cmath> <cstdint> <cstdio> <cstring> <limits> <memory> <random> <string>
  <utility> <vector> <gmock/gmock.h> <gtest/gtest.h>
  <absl/status/status.h> <absl/status/statusor.h> <absl/strings/str_cat.h>)
set(F2OBO_PCH_RPC_HEADERS ${F2OBO_PCH_CORE_HEADERS}
  <atomic> <chrono> <filesystem> <fstream> <map> <sstream> <thread>
  <grpcpp/grpcpp.h> <f2obo/v1/f2obo.pb.h> <f2obo/v1/f2obo.grpc.pb.h> <f2obo/v1/transfer.pb.h>)

# f2obo_pch_drop_forced_include(<target>): the target's compile options
# without the forced GCC 12 intrinsics header.
function(f2obo_pch_drop_forced_include target)
  if(F2OBO_GCC12_INTRINSICS_OPTION)
    get_target_property(options ${target} COMPILE_OPTIONS)
    list(REMOVE_ITEM options "${F2OBO_GCC12_INTRINSICS_OPTION}")
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS ${options})
  endif()
endfunction()

if(F2OBO_PCH)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/f2obo_pch_anchor.cc
       "// Compiled only to build the precompiled header (tests/precompiled_headers.cmake).\n")
  # The owners link what their users link, so their compile options are the
  # same; they precompile without the forced include (it would come first).
  add_library(f2obo_pch_core OBJECT ${CMAKE_CURRENT_BINARY_DIR}/f2obo_pch_anchor.cc)
  target_link_libraries(f2obo_pch_core PRIVATE f2obo_test_support GTest::gmock)
  target_precompile_headers(f2obo_pch_core PRIVATE ${F2OBO_PCH_CORE_HEADERS})
  f2obo_pch_drop_forced_include(f2obo_pch_core)
  add_library(f2obo_pch_rpc OBJECT ${CMAKE_CURRENT_BINARY_DIR}/f2obo_pch_anchor.cc)
  target_link_libraries(f2obo_pch_rpc PRIVATE f2obo_api f2obo_test_support GTest::gmock)
  target_precompile_headers(f2obo_pch_rpc PRIVATE ${F2OBO_PCH_RPC_HEADERS})
  f2obo_pch_drop_forced_include(f2obo_pch_rpc)
endif()

# f2obo_use_pch(<core|rpc> <targets...>): the targets include that kind's
# precompiled header first (nothing when F2OBO_PCH is OFF).  Were a target's
# options to differ from its owner's, GCC would read the plain header
# instead, slower but the same (add -Winvalid-pch to see it say so).
function(f2obo_use_pch kind)
  if(NOT F2OBO_PCH)
    return()
  endif()
  set(header ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/f2obo_pch_${kind}.dir/cmake_pch.hxx)
  foreach(target IN LISTS ARGN)
    f2obo_pch_drop_forced_include(${target})
    target_compile_options(${target} PRIVATE "SHELL:-include \"${header}\""
                           ${F2OBO_GCC12_INTRINSICS_OPTION})
    add_dependencies(${target} f2obo_pch_${kind})
  endforeach()
endfunction()
