// Sessions larger than a message, over real gRPC on
// loopback with real server processes: a multi-task session whose state is
// a few MB, on servers whose --max_message_bytes is 1 MiB, is refused by
// the unary ExportSession (naming ExportSessionStream), moves through
// ExportSessionStream / ImportSessionStream in chunks well under the limit
// and continues bit for bit on the other server; an import that breaks,
// is cancelled, is damaged or carries a bad field leaves nothing (no
// session, no store record, also after kill -9 and a restart), as does a
// kill -9 of the importing server mid-stream.  Forks and rebalance:
// transfer_fork_e2e_test.cc.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/session_transfer.h"
#include "tests/server/server_process.h"
#include "tests/server/transfer_e2e_support.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;

using transfer_e2e::Create;
using transfer_e2e::Export;
using transfer_e2e::ExportOf;
using transfer_e2e::FilesIn;
using transfer_e2e::Flags;
using transfer_e2e::From;
using transfer_e2e::Grow;
using transfer_e2e::kMaxMessage;
using transfer_e2e::kPerStep;
using transfer_e2e::kTouched;
using transfer_e2e::Later;
using transfer_e2e::Request;
using transfer_e2e::Reseal;
using transfer_e2e::SameBits;

class TransferE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<ServerProcess>(Flags());
    b_ = std::make_unique<ServerProcess>(Flags());
    ASSERT_TRUE(a_->started()) << a_->banner();
    ASSERT_TRUE(b_->started()) << b_->banner();
    ca_ = std::make_unique<client::Client>(client::ClientOptions{a_->target()});
    cb_ = std::make_unique<client::Client>(client::ClientOptions{b_->target()});
    next_t_ = Grow(*ca_, "big");
  }
  // b holds no session, also after kill -9 and a restart, and its store no
  // side file.
  void ExpectBEmptyAfterRestart() {
    EXPECT_EQ(cb_->ListSessions()->sessions_size(), 0);
    const std::string dir = b_->data_dir();
    b_->Stop(SIGKILL);
    RestartB(dir);
    ASSERT_TRUE(b_->started()) << b_->banner();
    cb_ = std::make_unique<client::Client>(client::ClientOptions{b_->target()});
    const absl::StatusOr<v1::ListSessionsResponse> list = cb_->ListSessions();
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_EQ(list->sessions_size(), 0);
    EXPECT_EQ(FilesIn(dir + "/records"), 0);
  }
  // A new b on `dir`; the old one (which made `dir` and removes it when
  // destroyed) is kept until the end of the test.
  void RestartB(const std::string& dir) {
    stopped_.push_back(std::move(b_));
    b_ = std::make_unique<ServerProcess>(Flags(), dir);
  }
  // Steps a's and b's "big" alike from next_t_, replies equal bit for bit.
  void StepBoth(int steps) {
    for (int64_t t = next_t_; t < next_t_ + steps; ++t) {
      const v1::StepRequest req = Request("big", t, Later(t));
      const absl::StatusOr<v1::StepReply> x = ca_->Step(req), y = cb_->Step(req);
      ASSERT_TRUE(x.ok()) << x.status();
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TRUE(SameBits(x->x(), y->x())) << "t = " << t;
    }
    next_t_ += steps;
  }

  std::unique_ptr<ServerProcess> a_, b_;
  std::vector<std::unique_ptr<ServerProcess>> stopped_;
  std::unique_ptr<client::Client> ca_, cb_;
  int64_t next_t_ = 0;
};

TEST_F(TransferE2e, ASessionLargerThanAMessageMovesInChunksAndContinuesBitForBit) {
  // The unary export would exceed the message limit: refused, naming the way.
  {
    auto ctx = ca_->NewContext();
    v1::ExportSessionRequest req;
    req.set_session_id("big");
    v1::SessionExport ex;
    const grpc::Status s = ca_->stub().ExportSession(ctx.get(), req, &ex);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("--max_message_bytes = 1048576"));
    EXPECT_THAT(s.error_message(), HasSubstr("ExportSessionStream"));
  }
  const Export ex = ExportOf(*ca_, "big");
  EXPECT_GT(ex.state.size(), static_cast<size_t>(kMaxMessage)) << "not larger than a message";
  EXPECT_GT(ex.chunks.size(), 4u);
  // Chunks of the server's default (a quarter of its message limit here).
  EXPECT_LE(ex.largest, static_cast<size_t>(kMaxMessage / 4 + 1024));
  const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(ex.chunks));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->session_id(), "big");
  EXPECT_EQ(in->next_t(), next_t_);
  EXPECT_EQ(in->multitask().tasks_touched(), kTouched);
  // The import's reply cache answers a retried step as the source does.
  {
    const v1::StepRequest retry = Request("big", next_t_ - 1, {0});
    const absl::StatusOr<v1::StepReply> x = ca_->Step(retry), y = cb_->Step(retry);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_TRUE(y->replayed());
    EXPECT_TRUE(SameBits(x->x(), y->x()));
  }
  StepBoth(6);
  // And the whole state after those steps, bit for bit.
  const Export after_a = ExportOf(*ca_, "big"), after_b = ExportOf(*cb_, "big");
  EXPECT_TRUE(after_a.state == after_b.state);
  EXPECT_EQ(after_a.chunks.back().end().state_bytes(), after_b.chunks.back().end().state_bytes());
  // The same through CopySession (the export piped into the import), renamed.
  const absl::StatusOr<v1::SessionInfo> copy = client::CopySession(*ca_, *cb_, "big", "big2");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->next_t(), next_t_);
  EXPECT_TRUE(ExportOf(*cb_, "big2").state == after_a.state);
  // Once more into an existing id: ALREADY_EXISTS, the first copy untouched.
  EXPECT_EQ(client::CopySession(*ca_, *cb_, "big").status().code(),
            absl::StatusCode::kAlreadyExists);
  StepBoth(2);
}

TEST_F(TransferE2e, ABrokenCancelledDamagedOrBadImportLeavesNothing) {
  const Export ex = ExportOf(*ca_, "big");
  const size_t half = ex.chunks.size() / 2;
  // The client gives up half-way (its source fails): the call is cancelled.
  {
    size_t sent = 0;
    const absl::StatusOr<v1::SessionInfo> in =
        client::ImportSessionChunks(*cb_, "", [&](v1::SessionChunk* chunk) -> absl::StatusOr<bool> {
          if (sent == half) return absl::AbortedError("the source broke");
          *chunk = ex.chunks[sent++];
          return true;
        });
    EXPECT_EQ(in.status().code(), absl::StatusCode::kAborted) << in.status();
  }
  // The stream ends (half-closed) before its end chunk.
  {
    const std::vector<v1::SessionChunk> first(ex.chunks.begin(), ex.chunks.begin() + half);
    const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(first));
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr("without its end chunk"));
  }
  // A byte damaged in transit: the checksum says so.
  {
    std::vector<v1::SessionChunk> damaged = ex.chunks;
    std::string* data = damaged[half].mutable_slices(0)->mutable_data();
    (*data)[data->size() / 2] ^= 0x10;
    const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(damaged));
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr("chunk.end.crc32"));
  }
  // Checked as the unary import checks, naming the field: the state's own
  // checksum (a damaged head resealed), a cached reply beyond the state.
  {
    std::vector<v1::SessionChunk> damaged = ex.chunks;
    std::string* head = damaged[0].mutable_slices(0)->mutable_data();
    ASSERT_EQ(damaged[0].slices(0).part(), 0);
    (*head)[40] ^= 0x01;
    Reseal(damaged);
    const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(damaged));
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr("session.state: "));
  }
  {
    std::vector<v1::SessionChunk> bad = ex.chunks;
    v1::SessionChunk& last = bad.back();
    ASSERT_GT(last.replies_size(), 0);
    v1::StepReply reply;
    ASSERT_TRUE(reply.ParseFromString(last.replies(0)));
    reply.set_t(next_t_);  // a step the state has not applied
    last.set_replies(0, reply.SerializeAsString());
    Reseal(bad);
    const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(bad));
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr("session.replies[0].t = "));
  }
  {
    std::vector<v1::SessionChunk> bad = ex.chunks;
    bad[1].mutable_slices(0)->set_part(0);  // the head again, after parts
    const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(bad));
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr("chunk.slices[0].part"));
  }
  ASSERT_NO_FATAL_FAILURE(ExpectBEmptyAfterRestart());
  // Nothing was left behind that blocks the real import (nor its memory
  // reservation).
  ASSERT_TRUE(client::ImportSessionChunks(*cb_, "", From(ex.chunks)).ok());
  StepBoth(3);
}

TEST_F(TransferE2e, KillNineOfTheImportingServerMidStreamLeavesNothing) {
  const Export ex = ExportOf(*ca_, "big");
  size_t sent = 0;
  const absl::StatusOr<v1::SessionInfo> in =
      client::ImportSessionChunks(*cb_, "", [&](v1::SessionChunk* chunk) -> absl::StatusOr<bool> {
        // Each Write returns once its chunk is on its way (flow control
        // holds later ones until the server reads): half-way, kill -9.
        if (sent == ex.chunks.size() / 2) b_->Stop(SIGKILL);
        if (sent == ex.chunks.size()) return false;
        *chunk = ex.chunks[sent++];
        return true;
      });
  EXPECT_FALSE(in.ok());
  RestartB(b_->data_dir());
  ASSERT_TRUE(b_->started()) << b_->banner();
  cb_ = std::make_unique<client::Client>(client::ClientOptions{b_->target()});
  ASSERT_NO_FATAL_FAILURE(ExpectBEmptyAfterRestart());
  ASSERT_TRUE(client::CopySession(*ca_, *cb_, "big").ok());
  StepBoth(2);
}

// A server asked to stop (SIGTERM) while an export is mid-stream ends it
// UNAVAILABLE saying it is shutting down (before, CANCELLED "the client
// stopped reading the export", as if the client had gone away).  The
// fault-injection build holds the export after its first chunk (the
// export_chunk_sent point); the test waits for it to be held, sends
// SIGTERM, waits until the server refuses a new call (the shutdown has
// begun; the export in flight holds it), and reads on.
TEST(TransferShutdownE2e, AnExportStoppedByTheServersShutdownSaysSo) {
  std::unique_ptr<ServerProcess> server;
  {
    testing::ScopedEnv hold("F2OBO_TEST_DELAY_AT", "export_chunk_sent:big@5000");
    server = std::make_unique<ServerProcess>(Flags());
  }
  ASSERT_TRUE(server->started()) << server->banner();
  client::Client c(client::ClientOptions{server->target()});
  ASSERT_TRUE(c.CreateSession(Create("big")).ok());
  std::vector<int> tasks;
  for (int k = 0; k < kPerStep; ++k) tasks.push_back(k);
  ASSERT_TRUE(c.Step(Request("big", 1, tasks)).ok());  // ~240 KB of task blocks
  grpc::ClientContext ctx;
  v1::ExportSessionStreamRequest req;
  req.set_session_id("big");
  req.set_chunk_bytes(4096);  // ~60 chunks
  const std::unique_ptr<grpc::ClientReader<v1::SessionChunk>> reader =
      c.stub().ExportSessionStream(&ctx, req);
  v1::SessionChunk chunk;
  ASSERT_TRUE(reader->Read(&chunk));
  ASSERT_TRUE(chunk.has_begin());
  ASSERT_EQ(server->AwaitStderr("delaying export_chunk_sent of 'big'", 1, std::chrono::seconds(30)),
            1u);
  ASSERT_EQ(kill(server->pid(), SIGTERM), 0);
  ASSERT_EQ(server->AwaitStderr("SIGTERM received, shutting down", 1, std::chrono::seconds(30)),
            1u);
  grpc::Status refused;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (refused.ok() && std::chrono::steady_clock::now() < give_up) {
    grpc::ClientContext list_ctx;
    v1::ListSessionsRequest list;
    v1::ListSessionsResponse out;
    refused = c.stub().ListSessions(&list_ctx, list, &out);
  }
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  ASSERT_THAT(refused.error_message(), HasSubstr("server is shutting down"));
  int more = 0;
  while (reader->Read(&chunk)) ++more;
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(more, 0);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr("server is shutting down: the export of session 'big' stopped after 1 "
                        "chunk; export again once it is back"));
  EXPECT_EQ(server->Stop(0), 0);  // and the server is down, cleanly
}

// kill -9 inside the importing server's store write (the session's head
// and part rows written, its transaction not committed): nothing is left,
// and the import then succeeds.
TEST_F(TransferE2e, KillNineInsideTheImportsStoreWriteLeavesNothing) {
  const Export ex = ExportOf(*ca_, "big");
  const std::string dir = b_->data_dir();
  b_->Stop(SIGKILL);
  {
    testing::ScopedEnv crash("F2OBO_TEST_CRASH_AT", "put_parts_written:big");
    RestartB(dir);
  }
  ASSERT_TRUE(b_->started()) << b_->banner();
  cb_ = std::make_unique<client::Client>(client::ClientOptions{b_->target()});
  const absl::StatusOr<v1::SessionInfo> in = client::ImportSessionChunks(*cb_, "", From(ex.chunks));
  // (A server still alive would have answered: it died at the point.)
  EXPECT_EQ(in.status().code(), absl::StatusCode::kUnavailable) << in.status();
  RestartB(dir);
  ASSERT_TRUE(b_->started()) << b_->banner();
  cb_ = std::make_unique<client::Client>(client::ClientOptions{b_->target()});
  ASSERT_NO_FATAL_FAILURE(ExpectBEmptyAfterRestart());
  ASSERT_TRUE(client::ImportSessionChunks(*cb_, "", From(ex.chunks)).ok());
  StepBoth(2);
}

}  // namespace
}  // namespace f2obo
