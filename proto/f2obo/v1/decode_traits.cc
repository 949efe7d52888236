#include "f2obo/v1/decode_traits.h"

#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo::v1 {
namespace {

// Where libprotobuf's log lines go while this thread decodes a request.
thread_local std::string* capture = nullptr;
thread_local absl::Status last_failure;
std::atomic<int64_t> undecodable{0};
std::atomic<google::protobuf::LogHandler*> previous_handler{nullptr};
std::mutex observer_mu;
std::function<void()> observer;  // guarded by observer_mu

void Handler(google::protobuf::LogLevel level, const char* file, int line,
             const std::string& message) {
  if (capture != nullptr) {
    absl::StrAppend(capture, capture->empty() ? "" : "; ", message);
    return;
  }
  if (google::protobuf::LogHandler* previous = previous_handler.load()) {
    previous(level, file, line, message);
  }
}

}  // namespace

absl::Status DecodeRequest(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* msg) {
  std::string said;
  std::string* const outer = capture;
  capture = &said;
  const grpc::Status parsed =
      grpc::GenericDeserialize<grpc::ProtoBufferReader, google::protobuf::MessageLite>(buffer, msg);
  capture = outer;
  if (parsed.ok()) return absl::OkStatus();
  undecodable.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(observer_mu);
    if (observer) observer();
  }
  // gRPC's own reasons ("No payload", a reader error) are kept; a failed
  // parse has none (InitializationErrorString() is empty for proto3).
  const std::string why = !said.empty() ? said
                          : !parsed.error_message().empty()
                              ? parsed.error_message()
                              : "not a valid protobuf encoding (truncated, or a "
                                "malformed tag, length or wire type)";
  absl::Status refused = absl::InvalidArgumentError(
      absl::StrCat("could not decode the ", msg->GetTypeName(), " message: ", why));
  last_failure = refused;
  return refused;
}

void CaptureDecodeLogs() {
  static std::once_flag once;
  std::call_once(once, [] { previous_handler = google::protobuf::SetLogHandler(&Handler); });
}

int64_t UndecodableRequests() { return undecodable.load(std::memory_order_relaxed); }

void SetDecodeFailureObserver(std::function<void()> f) {
  std::lock_guard<std::mutex> lock(observer_mu);
  observer = std::move(f);
}

namespace decode_internal {

absl::Status TakeFailure() { return std::exchange(last_failure, absl::OkStatus()); }

void ClearFailure() { last_failure = absl::OkStatus(); }

}  // namespace decode_internal

}  // namespace f2obo::v1
