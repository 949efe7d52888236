# The fuzz build (top-level -DF2OBO_FUZZ=ON, driven by fuzz/run_fuzz.sh):
# clang with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer on
# every project source it compiles, and only what the fuzzer needs: the core
# library, the contract and its conversions (proto/), and the server's
# session manager, metrics pipeline and store, linked against Debian's
# gRPC, protobuf, Abseil and SQLite (not rebuilt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "F2OBO_FUZZ needs clang (CXX=clang++-14); this is ${CMAKE_CXX_COMPILER_ID}")
endif()
# Build type Fuzz: optimized enough to run fast, with assertions (Eigen's
# index checks included) and line tables for the reports.
set(CMAKE_CXX_FLAGS_FUZZ "-O1 -gline-tables-only -fno-omit-frame-pointer")
# UBSan without object-size: ASan reports those accesses itself, and the
# check costs a fifth of the compile time of the Eigen-heavy sources.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=object-size
  -fno-sanitize-recover=all)
add_link_options(-fsanitize=address,undefined)
# Protobuf's generated code (proto/CMakeLists.txt) keeps only the coverage
# that guides the fuzzer through the messages' structure: its own bugs are
# protobuf's, and sanitizing it cost 3x its compile time (15 s of CPU).
# Our code's accesses to message memory stay checked (ASan's allocator).
set(F2OBO_GENERATED_CODE_OPTIONS -fno-sanitize=address,undefined)

add_subdirectory(core)
add_subdirectory(proto)

find_package(SQLite3 REQUIRED)
find_package(PostgreSQL REQUIRED)
include(${PROJECT_SOURCE_DIR}/server/session_sources.cmake)  # F2OBO_SESSION_SOURCES
add_library(f2obo_fuzz_harness STATIC
  ${PROJECT_SOURCE_DIR}/fuzz/step_harness.cc
  ${F2OBO_SESSION_SOURCES}
)
target_link_libraries(f2obo_fuzz_harness PUBLIC f2obo_api SQLite::SQLite3 PostgreSQL::PostgreSQL)

# Precompiled headers: most of a core or session source's compile here is
# parsing Eigen, Abseil and the generated messages; with them ~1.9 s less of
# CPU per source, ~200 s of this build's ~630 (bench/RESULTS.md "Build and
# CI"), which runs inside ctest.  Not for the generated code nor
# make_corpus's sources, which are compiled with other sanitizer options.
set(F2OBO_FUZZ_PCH_HEADERS <algorithm> <cmath> <cstdint> <memory> <string> <utility> <vector>
  <Eigen/Dense> <absl/status/statusor.h> <absl/strings/str_cat.h>)
target_precompile_headers(f2obo_core PRIVATE ${F2OBO_FUZZ_PCH_HEADERS})
target_precompile_headers(f2obo_fuzz_harness PRIVATE ${F2OBO_FUZZ_PCH_HEADERS}
  <f2obo/v1/f2obo.pb.h>)

add_executable(step_fuzzer ${PROJECT_SOURCE_DIR}/fuzz/step_fuzzer.cc)
target_link_libraries(step_fuzzer PRIVATE f2obo_fuzz_harness)
target_link_options(step_fuzzer PRIVATE -fsanitize=fuzzer)

# The seed generator: valid requests of every family and algorithm, from the
# same builders as the end-to-end tests.
add_executable(make_corpus
  ${PROJECT_SOURCE_DIR}/fuzz/make_corpus.cc
  ${PROJECT_SOURCE_DIR}/tests/server/e2e_support.cc
  ${PROJECT_SOURCE_DIR}/tests/core/test_streams.cc
  ${PROJECT_SOURCE_DIR}/tests/core/bilevel/families/family_checks.cc
)
target_link_libraries(make_corpus PRIVATE f2obo_fuzz_harness)
# It only writes the seeds: its own sources need no sanitizer nor coverage.
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/fuzz/make_corpus.cc
  ${PROJECT_SOURCE_DIR}/tests/server/e2e_support.cc
  ${PROJECT_SOURCE_DIR}/tests/core/test_streams.cc
  ${PROJECT_SOURCE_DIR}/tests/core/bilevel/families/family_checks.cc
  PROPERTIES COMPILE_OPTIONS -fno-sanitize=all)
