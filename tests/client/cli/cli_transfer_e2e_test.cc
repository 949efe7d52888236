// f2obo-cli export and import against real servers (see cli_e2e_fixture.h):
// a session written to a file and imported into a second server under
// another id continues bit for bit; a damaged, cut, foreign or overlong
// file is refused (exit 2) and the server keeps nothing; an export that
// fails leaves no file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/session_transfer.h"
#include "tests/client/cli/cli_e2e_fixture.h"
#include "tests/server/e2e_support.h"

namespace f2obo {
namespace {

using testing::CliE2e;
using ::testing::HasSubstr;
using testing::Result;
using testing::RunCli;
using testing::ServerProcess;

// The export's files of its own ("<path>.partial.*") left beside `path`.
int PartialFilesOf(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".partial";
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(p.parent_path())) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// quadratic with y of 20,000: ~320 KB of state, ~80 chunks of 4 KiB.
testing::FamilyCase Big() {
  testing::FamilyCase q = testing::AllFamilyCases()[0];
  q.family.set_y_dim(20000);
  return q;
}

void CreateAndStep(client::Client& c, const std::string& id, int steps) {
  v1::CreateSessionRequest create;
  create.set_session_id(id);
  *create.mutable_spec() = testing::SpecFor(Big(), "f2obo", 3);
  ASSERT_TRUE(c.CreateSession(create).ok());
  for (int t = 1; t <= steps; ++t) {
    const absl::StatusOr<v1::StepReply> r = c.Step(testing::RequestFor(Big(), id, t));
    ASSERT_TRUE(r.ok()) << r.status();
  }
}

// Every slice's bytes of `id`'s export, in order: its whole state.
std::string StateOf(client::Client& c, const std::string& id) {
  std::string state;
  const absl::Status s = client::ExportSessionChunks(c, id, [&](const v1::SessionChunk& chunk) {
    for (const v1::StateSlice& slice : chunk.slices()) state += slice.data();
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return state;
}

bool SameBits(const google::protobuf::RepeatedField<double>& a,
              const google::protobuf::RepeatedField<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Where the file's last chunk begins: after the 16-byte magic line, each
// chunk is its size as a varint, then its bytes.
size_t LastChunkOffset(const std::string& file) {
  size_t at = 16, last = at;
  while (at < file.size()) {
    last = at;
    uint64_t size = 0;
    for (int shift = 0;; shift += 7) {
      const auto byte = static_cast<unsigned char>(file[at++]);
      size |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    at += size;
  }
  return last;
}

TEST_F(CliE2e, ASessionExportedToAFileContinuesBitForBitOnAnotherServer) {
  client::Client a({server_->target()});
  ASSERT_NO_FATAL_FAILURE(CreateAndStep(a, "xf", 5));
  const std::string file = *dir_ + "/xf.f2obo";
  const Result ex = Cli({"export", "--session=xf", "--file=" + file, "--chunk_bytes=4096"});
  ASSERT_EQ(ex.code, 0) << ex.err;
  EXPECT_THAT(ex.out, HasSubstr("xf: "));
  EXPECT_THAT(ex.out, HasSubstr(" cached replies, in "));
  EXPECT_THAT(ex.out, HasSubstr(" to " + file));
  const long chunks = std::stol(ex.out.substr(ex.out.find(" in ") + 4));
  EXPECT_GT(chunks, 50) << ex.out;  // the state in many chunks
  EXPECT_EQ(PartialFilesOf(file), 0);

  ServerProcess b;
  ASSERT_TRUE(b.started()) << b.banner();
  const Result im = RunCli({"import", "--file=" + file, "--id=xf.moved", "--server=" + b.target()});
  ASSERT_EQ(im.code, 0) << im.err;
  EXPECT_EQ(im.out, "xf.moved: next_t 6, algorithm f2obo, from " + file + "\n");
  client::Client cb({b.target()});
  EXPECT_TRUE(StateOf(a, "xf") == StateOf(cb, "xf.moved"));
  // The reply cache came along: a retried step 5 is answered as a's is.
  {
    const absl::StatusOr<v1::StepReply> x = a.Step(testing::RequestFor(Big(), "xf", 5));
    const absl::StatusOr<v1::StepReply> y = cb.Step(testing::RequestFor(Big(), "xf.moved", 5));
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_TRUE(y->replayed());
    EXPECT_TRUE(SameBits(x->x(), y->x()));
  }
  for (int t = 6; t <= 9; ++t) {
    const absl::StatusOr<v1::StepReply> x = a.Step(testing::RequestFor(Big(), "xf", t));
    const absl::StatusOr<v1::StepReply> y = cb.Step(testing::RequestFor(Big(), "xf.moved", t));
    ASSERT_TRUE(x.ok()) << x.status();
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(SameBits(x->x(), y->x())) << "t = " << t;
  }
  EXPECT_TRUE(StateOf(a, "xf") == StateOf(cb, "xf.moved"));
}

TEST_F(CliE2e, ADamagedCutForeignOrOverlongFileIsRefusedAndTheServerKeepsNothing) {
  client::Client a({server_->target()});
  ASSERT_NO_FATAL_FAILURE(CreateAndStep(a, "xd", 3));
  const std::string file = *dir_ + "/xd.f2obo", bad = *dir_ + "/xd-bad.f2obo";
  ASSERT_EQ(Cli({"export", "--session=xd", "--file=" + file, "--chunk_bytes=4096"}).code, 0);
  const std::string intact = ReadAll(file);
  ServerProcess b;
  ASSERT_TRUE(b.started()) << b.banner();
  client::Client cb({b.target()});
  const auto import = [&](const std::string& path) {
    return RunCli({"import", "--file=" + path, "--server=" + b.target()});
  };
  struct Case {
    const char* name;
    std::string bytes;
    const char* says;
  };
  std::string flipped = intact;
  flipped[flipped.size() / 2] ^= 0x10;  // in the state's numbers: still parses
  std::vector<Case> cases = {
      {"a byte changed", flipped, "checksum mismatch"},
      {"cut in a chunk", intact.substr(0, intact.size() / 2), "does not parse"},
      {"the end chunk cut off", intact.substr(0, LastChunkOffset(intact)), "before the end chunk"},
      {"bytes after the end", intact + "more", "bytes after the end chunk"},
  };
  for (const Case& c : cases) {
    WriteAll(bad, c.bytes);
    const Result r = import(bad);
    EXPECT_EQ(r.code, 2) << c.name << ": " << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << c.name;
    EXPECT_THAT(r.err, HasSubstr("damaged or cut short, nothing imported")) << c.name;
    const absl::StatusOr<v1::ListSessionsResponse> list = cb.ListSessions();
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->sessions_size(), 0) << c.name;
  }
  const Result foreign = import(*dir_ + "/data.csv");
  EXPECT_EQ(foreign.code, 2);
  EXPECT_THAT(foreign.err, HasSubstr("is not a session export"));
  const Result missing = import(*dir_ + "/none.f2obo");
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot open"));
  EXPECT_EQ(cb.ListSessions()->sessions_size(), 0);
  // The intact file imports (the refusals above were the damage's).
  const Result ok = import(file);
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(StateOf(a, "xd") == StateOf(cb, "xd"));

  // An export that fails leaves no file.
  const std::string none = *dir_ + "/nosuch.f2obo";
  const Result unknown = Cli({"export", "--session=nosuch", "--file=" + none});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND"));
  EXPECT_FALSE(std::filesystem::exists(none));
  EXPECT_EQ(PartialFilesOf(none), 0);
}

}  // namespace
}  // namespace f2obo
