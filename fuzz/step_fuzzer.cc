// libFuzzer entry point: hostile (session spec | exported session, step
// request) pairs through decoding, validation, limits and one or more
// rounds.  See step_harness.h for the input framing and the invariants, and
// README.md for how to run it.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz/step_harness.h"

namespace {

// Parsing arbitrary bytes makes protobuf log (e.g. invalid UTF-8 in a
// string field) on every other input; the parse result is what counts.
void QuietProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                      const std::string& message) {
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    std::fprintf(stderr, "[libprotobuf FATAL %s:%d] %s\n", file, line, message.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(&QuietProtobufLog);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  f2obo::fuzz::RunInput(data, size);
  return 0;
}
