// Bytes that do not decode as the method's request, sent raw through a
// generic stub to the real server: INVALID_ARGUMENT with the reason, for
// every method of the service, and no libprotobuf log line per request
// (gRPC 1.51 itself answers INTERNAL with an empty message and libprotobuf
// logs invalid UTF-8; see proto/f2obo/v1/decode_traits.h).
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ServerProcess;

void* Tag(intptr_t i) { return reinterpret_cast<void*>(i); }

// One call of `method` as a raw stream (unary, server-streaming and
// bidirectional methods all are on the wire): each message of `messages`
// is written, every reply is read into `replies`, then the status.
grpc::Status CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::vector<std::string>& messages,
                     std::vector<std::string>* replies = nullptr) {
  grpc::CompletionQueue cq;
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  const auto wait = [&](intptr_t expected) {
    void* got = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&got, &ok));
    EXPECT_EQ(got, Tag(expected));
    return ok;
  };
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(&ctx, method, &cq);
  call->StartCall(Tag(1));
  wait(1);
  for (const std::string& bytes : messages) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    call->Write(buffer, Tag(2));
    if (!wait(2)) break;  // the server already ended the call
    if (replies == nullptr) continue;
    grpc::ByteBuffer reply;
    call->Read(&reply, Tag(3));
    if (!wait(3)) break;
    grpc::Slice out;
    if (reply.TrySingleSlice(&out).ok()) {
      replies->push_back(std::string(reinterpret_cast<const char*>(out.begin()), out.size()));
    } else if (reply.DumpToSingleSlice(&out).ok()) {
      replies->push_back(std::string(reinterpret_cast<const char*>(out.begin()), out.size()));
    }
  }
  call->WritesDone(Tag(4));
  wait(4);
  grpc::Status status;
  call->Finish(&status, Tag(5));
  wait(5);
  return status;
}

std::string Path(const google::protobuf::MethodDescriptor* m) {
  return "/" + m->service()->full_name() + "/" + m->name();
}

// A field 1 with wire type 7, which does not exist: no message parses it.
const std::string kMalformed("\x0f\x01", 2);
// Field 1 as a length-delimited value that is not UTF-8.
const std::string kNotUtf8("\x0a\x02\xff\xfe", 4);

TEST(UndecodableE2e, EveryMethodAnswersInvalidArgumentWithTheReasonAndLogsNothing) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  const auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("f2obo.v1.F2obo");
  ASSERT_NE(service, nullptr);
  int sent = 0;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* m = service->method(i);
    SCOPED_TRACE(m->name());
    const std::string type = m->input_type()->full_name();
    grpc::Status s = CallRaw(channel, Path(m), {kMalformed});
    ++sent;
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("could not decode the " + type +
                                             " message: not a valid protobuf encoding"));
    // Where field 1 is a string, bytes that are not UTF-8 are refused with
    // what libprotobuf says about them (which it would otherwise log).
    const google::protobuf::FieldDescriptor* first = m->input_type()->FindFieldByNumber(1);
    if (first == nullptr || first->type() != google::protobuf::FieldDescriptor::TYPE_STRING) {
      continue;
    }
    s = CallRaw(channel, Path(m), {kNotUtf8});
    ++sent;
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("could not decode the " + type + " message"));
    EXPECT_THAT(s.error_message(), HasSubstr("'" + first->full_name() + "'"));
    EXPECT_THAT(s.error_message(), HasSubstr("invalid UTF-8"));
  }
  ASSERT_GT(sent, service->method_count());

  // The server goes on serving, and has counted each one.
  client::Client c({server.target()});
  EXPECT_TRUE(c.ListSessions().ok());
  EXPECT_THAT(testing::HttpGet(server.metrics_port(), "/metrics"),
              HasSubstr("f2obo_undecodable_requests_total " + std::to_string(sent) + "\n"));
  EXPECT_THAT(server.Stderr(), Not(HasSubstr("libprotobuf")));
}

// On the Steps stream, applied steps stay applied and answered; the
// undecodable message ends the stream with INVALID_ARGUMENT (gRPC alone
// would end it with OK, as if the client had closed it).
TEST(UndecodableE2e, AnUndecodableMessageEndsTheStepsStreamWithInvalidArgument) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const testing::FamilyCase f = testing::AllFamilyCases()[0];
  v1::CreateSessionRequest create;
  create.set_session_id("raw");
  *create.mutable_spec() = testing::SpecFor(f, "f2obo", 1);
  ASSERT_TRUE(c.CreateSession(create).ok());
  std::vector<std::string> replies;
  const grpc::Status s = CallRaw(c.channel(), "/f2obo.v1.F2obo/Steps",
                                 {testing::RequestFor(f, "raw", 1).SerializeAsString(),
                                  testing::RequestFor(f, "raw", 2).SerializeAsString(), kNotUtf8,
                                  testing::RequestFor(f, "raw", 3).SerializeAsString()},
                                 &replies);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr("could not decode the f2obo.v1.StepRequest message: String field "
                        "'f2obo.v1.StepRequest.session_id' contains invalid UTF-8"));
  ASSERT_EQ(replies.size(), 2u);
  v1::StepReply second;
  ASSERT_TRUE(second.ParseFromString(replies[1]));
  EXPECT_EQ(second.t(), 2);
  const auto info = c.GetSession("raw");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->next_t(), 3);
  EXPECT_THAT(server.Stderr(), Not(HasSubstr("libprotobuf")));
}

}  // namespace
}  // namespace f2obo
