// The fault-injection server build (f2obo-server-faults = server/main.cc
// plus this file; tests/CMakeLists.txt): installs a fault handler
// (server/fault_points.h) from the environment before main runs.
//   F2OBO_TEST_CRASH_AT=point[:id]  the server dies there as by kill -9
//   F2OBO_TEST_FAIL_AT=point[:id]   the operation fails there (INTERNAL)
// Without ":id" a point matches whatever it names.  The production server
// does not contain this file, so neither variable means anything to it.
#include <csignal>
#include <cstdlib>
#include <string>
#include <string_view>

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
  if (crash == nullptr && fail == nullptr) return false;
  SetFaultHandlerForTesting([crash, fail](std::string_view point, std::string_view id) {
    if (Matches(crash, point, id)) std::raise(SIGKILL);
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
