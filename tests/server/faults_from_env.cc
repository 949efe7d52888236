// The fault-injection server build (f2obo-server-faults = server/main.cc
// plus this file; tests/CMakeLists.txt): installs a fault handler
// (server/fault_points.h) from the environment before main runs.
//   F2OBO_TEST_CRASH_AT=point[:id]  the server dies there as by kill -9
//   F2OBO_TEST_FAIL_AT=point[:id]   the operation fails there (INTERNAL)
//   F2OBO_TEST_DELAY_AT=point[:id]@ms  the thread there waits ms (e.g. a
//                                   store writer held as by a large write)
// Without ":id" a point matches whatever it names.  The production server
// does not contain this file, so neither variable means anything to it.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/fault_points.h"

namespace f2obo::server {
namespace {

bool Matches(const char* spec, std::string_view point, std::string_view id) {
  if (spec == nullptr) return false;
  const std::string_view s(spec);
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return s == point;
  return s.substr(0, colon) == point && s.substr(colon + 1) == id;
}

[[maybe_unused]] const bool installed = [] {
  const char* crash = std::getenv("F2OBO_TEST_CRASH_AT");
  const char* fail = std::getenv("F2OBO_TEST_FAIL_AT");
  const char* delay_spec = std::getenv("F2OBO_TEST_DELAY_AT");
  if (crash == nullptr && fail == nullptr && delay_spec == nullptr) return false;
  std::string delay_at;
  int delay_ms = 0;
  if (delay_spec != nullptr) {
    const std::string spec(delay_spec);
    const size_t at = spec.rfind('@');
    delay_at = spec.substr(0, at);
    delay_ms = at == std::string::npos ? 0 : std::atoi(spec.c_str() + at + 1);
  }
  SetFaultHandlerForTesting([crash, fail, delay_at, delay_ms](std::string_view point,
                                                              std::string_view id) {
    if (Matches(crash, point, id)) std::raise(SIGKILL);
    if (delay_ms > 0 && Matches(delay_at.c_str(), point, id)) {
      // Said first, so that a test can wait for the writer to be held.
      std::fprintf(stderr, "f2obo-server-faults: delaying %s of '%s' by %d ms\n",
                   std::string(point).c_str(), std::string(id).c_str(), delay_ms);
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
    if (Matches(fail, point, id)) {
      return absl::InternalError(absl::StrCat("fault injected at ", std::string(point), " for '",
                                              std::string(id), "' (F2OBO_TEST_FAIL_AT)"));
    }
    return absl::OkStatus();
  });
  return true;
}();

}  // namespace
}  // namespace f2obo::server
