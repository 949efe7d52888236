# The fuzz build (top-level -DF2OBO_FUZZ=ON, driven by fuzz/run_fuzz.sh):
# clang with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer on
# every project source it compiles, and only what the fuzzer needs: the core
# library, the contract and its conversions (proto/), and the server's
# session manager and metrics pipeline, linked against Debian's gRPC,
# protobuf and Abseil (not rebuilt).
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

# The session manager's sources less those the harness cannot reach: it
# runs its manager without a store (store=nullptr), so neither the SQLite
# nor the PostgreSQL store, their writer thread and checkpoint rows nor
# the installs from stored sessions; and one session at a time, so neither
# groups (step_runner_group.cc) nor the listing views (session_views.cc).
# The linker dropped exactly these objects from step_fuzzer and make_corpus
# (ld -t -t); compiling them with the sanitizers cost 47 s of CPU.  A
# source the harness comes to need shows as an undefined symbol at the
# link, which fails ctest's step_fuzzer.
include(${PROJECT_SOURCE_DIR}/server/session_sources.cmake)  # F2OBO_SESSION_SOURCES
set(F2OBO_FUZZ_SESSION_SOURCES ${F2OBO_SESSION_SOURCES})
list(FILTER F2OBO_FUZZ_SESSION_SOURCES EXCLUDE REGEX
  "/server/(store/|installs_stored\\.cc$|session_views\\.cc$|step_runner_group\\.cc$)")
add_library(f2obo_fuzz_harness STATIC
  ${PROJECT_SOURCE_DIR}/fuzz/step_harness.cc
  ${F2OBO_FUZZ_SESSION_SOURCES}
  # What a failed store write answers (StoreWriteFailed), used by the manager.
  ${PROJECT_SOURCE_DIR}/server/store/store_errors.cc
)
target_link_libraries(f2obo_fuzz_harness PUBLIC f2obo_api)

# Precompiled headers: most of a core or session source's compile here is
# parsing Eigen, Abseil and the generated messages; with them ~1.9 s less of
# CPU per source, and this build runs inside ctest (its CPU today:
# bench/RESULTS.md "Build and CI").  Not for the generated code nor
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

# One goal for run_fuzz.sh: with the Makefile generator, `cmake --build
# --target step_fuzzer make_corpus -j2` runs a sub-make per target in
# parallel, and both compiled the harness library they share (20 of the
# build's compiles twice, ~48 s of CPU, and two compilers writing the same
# objects).
add_custom_target(fuzz_programs)
add_dependencies(fuzz_programs step_fuzzer make_corpus)
