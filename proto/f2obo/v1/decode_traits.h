// How f2obo's request messages come off the wire.  Like gRPC's own
// serialization (grpcpp/impl/codegen/proto_utils.h), with one difference:
// gRPC 1.51's GenericDeserialize answers a request it cannot parse with
// INTERNAL and InitializationErrorString() -- empty for proto3 -- and
// libprotobuf logs a line for each one whose string fields are not UTF-8.
// Here such a request gets INVALID_ARGUMENT saying why ("could not decode
// the f2obo.v1.StepRequest message: ..."), and what libprotobuf says while
// decoding it becomes that message instead of a log line (once
// CaptureDecodeLogs() is installed).
//
// The generated f2obo.grpc.pb.h includes this header before any gRPC
// template (grpc_cpp_plugin's additional_header_includes, see
// proto/CMakeLists.txt), so every use of a request's SerializationTraits
// sees the specializations below.
#ifndef F2OBO_PROTO_F2OBO_V1_DECODE_TRAITS_H_
#define F2OBO_PROTO_F2OBO_V1_DECODE_TRAITS_H_

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::v1 {

// Parses `buffer` into `msg`; INVALID_ARGUMENT with the reason if it cannot
// ("could not decode the f2obo.v1.StepRequest message: ...").
absl::Status DecodeRequest(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* msg);

// Installs (once, process-wide) a libprotobuf log handler that turns what
// libprotobuf logs while DecodeRequest runs into the refusal's message;
// every other log line goes to the handler that was installed before.
void CaptureDecodeLogs();

// Requests that could not be decoded since the process started.
int64_t UndecodableRequests();
// Called (from the decoding thread) for each of them; an empty function
// removes the observer.  The server counts them in Prometheus.
void SetDecodeFailureObserver(std::function<void()> observer);

namespace decode_internal {
// The refusal of the last message this thread failed to decode (OK: none),
// cleared by taking it; for ReadMessage only.
absl::Status TakeFailure();
void ClearFailure();
}  // namespace decode_internal

// The next message of a stream (`stream` a grpc::ServerReaderWriter or
// grpc::ServerReader): true with the message in `msg`, false at the
// client's end of the stream, or DecodeRequest's refusal of a message that
// could not be decoded.  (gRPC's Read() says only false for both: the
// refusal, made on this thread while Read() decoded, is kept for it here;
// one left by an earlier call on the same thread is cleared first.)
template <typename Stream, typename Message>
absl::StatusOr<bool> ReadMessage(Stream* stream, Message* msg) {
  decode_internal::ClearFailure();
  if (stream->Read(msg)) return true;
  if (absl::Status refused = decode_internal::TakeFailure(); !refused.ok()) return refused;
  return false;
}

}  // namespace f2obo::v1

// The generated unary handlers (and stubs) decode through their base type,
// SerializationTraits<MessageLite>; streams through the concrete request
// type.  (The health stubs include this header too, so that every
// instantiation of these traits in the project is the same.)  A test sends
// bytes that do not parse to each method of the service descriptor, so a
// streaming request type missing here fails it.
#define F2OBO_V1_DECODE_TRAITS(Message)                                                           \
  namespace grpc {                                                                                \
  template <>                                                                                     \
  class SerializationTraits<Message, void> {                                                      \
   public:                                                                                        \
    static Status Serialize(const protobuf::MessageLite& msg, ByteBuffer* bb, bool* own_buffer) { \
      return GenericSerialize<ProtoBufferWriter, Message>(msg, bb, own_buffer);                   \
    }                                                                                             \
    static Status Deserialize(ByteBuffer* buffer, protobuf::MessageLite* msg) {                   \
      /* gRPC's contract: a grpc::Status, whose code a unary caller gets. */                      \
      const absl::Status decoded = f2obo::v1::DecodeRequest(buffer, msg);                         \
      if (decoded.ok()) return Status::OK;                                                        \
      return Status(StatusCode::INVALID_ARGUMENT, std::string(decoded.message()));                \
    }                                                                                             \
  };                                                                                              \
  }

F2OBO_V1_DECODE_TRAITS(::google::protobuf::MessageLite)          // unary
F2OBO_V1_DECODE_TRAITS(::f2obo::v1::StepRequest)                 // Steps
F2OBO_V1_DECODE_TRAITS(::f2obo::v1::GroupStepRequest)            // StepsGroup
F2OBO_V1_DECODE_TRAITS(::f2obo::v1::WatchMetricsRequest)         // WatchMetrics
F2OBO_V1_DECODE_TRAITS(::f2obo::v1::OracleClientMessage)         // OracleSteps
F2OBO_V1_DECODE_TRAITS(::f2obo::v1::ExportSessionStreamRequest)  // ExportSessionStream
F2OBO_V1_DECODE_TRAITS(::f2obo::v1::ImportSessionStreamRequest)  // ImportSessionStream

#undef F2OBO_V1_DECODE_TRAITS

#endif  // F2OBO_PROTO_F2OBO_V1_DECODE_TRAITS_H_
