// client/session_file: a session export written to a file all or nothing,
// and two writers of one path not writing into one file.
#include "client/session_file.h"

#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace f2obo::client {
namespace {

std::string TempDir() {
  std::string dir = (std::filesystem::temp_directory_path() / "f2obo_session_file_XXXXXX").string();
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

std::vector<v1::SessionChunk> Chunks(const std::string& id, int slices) {
  std::vector<v1::SessionChunk> chunks(3);
  chunks[0].mutable_begin()->set_session_id(id);
  for (int i = 0; i < slices; ++i) {
    v1::StateSlice* s = chunks[1].add_slices();
    s->set_part(0);
    s->set_data(std::string(1000, static_cast<char>('a' + i % 26)) + id);
  }
  chunks[2].mutable_end()->set_state_bytes(12345);
  return chunks;
}

// What a writer of these chunks leaves in the file: the magic, then each
// chunk length-delimited.
std::string FileOf(const std::vector<v1::SessionChunk>& chunks) {
  std::ostringstream out;
  out << kSessionFileMagic;
  for (const v1::SessionChunk& c : chunks) {
    EXPECT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(c, &out));
  }
  return out.str();
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

TEST(SessionFile, TwoExportsToOnePathDoNotWriteIntoOneFile) {
  const std::string dir = TempDir();
  const std::string path = dir + "/s.f2obo";
  const std::vector<v1::SessionChunk> a = Chunks("first", 40), b = Chunks("second", 7);
  absl::StatusOr<std::unique_ptr<SessionFileWriter>> wa = SessionFileWriter::Create(path);
  absl::StatusOr<std::unique_ptr<SessionFileWriter>> wb = SessionFileWriter::Create(path);
  ASSERT_TRUE(wa.ok()) << wa.status();
  ASSERT_TRUE(wb.ok()) << wb.status();
  EXPECT_EQ(Entries(dir).size(), 2u);      // a file each, nothing under `path` yet
  for (size_t i = 0; i < a.size(); ++i) {  // interleaved
    ASSERT_TRUE((*wa)->Add(a[i]).ok());
    ASSERT_TRUE((*wb)->Add(b[i]).ok());
  }
  ASSERT_TRUE((*wb)->Commit().ok());
  EXPECT_EQ(Read(path), FileOf(b));
  ASSERT_TRUE((*wa)->Commit().ok());
  EXPECT_EQ(Read(path), FileOf(a));  // the last to commit, whole
  wa->reset();
  wb->reset();
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"s.f2obo"});
  std::filesystem::remove_all(dir);
}

TEST(SessionFile, AWriterDestroyedBeforeItsCommitLeavesTheCommittedFileAndNoOther) {
  const std::string dir = TempDir();
  const std::string path = dir + "/s.f2obo";
  const std::vector<v1::SessionChunk> a = Chunks("kept", 3), b = Chunks("dropped", 5);
  {
    absl::StatusOr<std::unique_ptr<SessionFileWriter>> wa = SessionFileWriter::Create(path);
    ASSERT_TRUE(wa.ok()) << wa.status();
    for (const v1::SessionChunk& c : a) ASSERT_TRUE((*wa)->Add(c).ok());
    ASSERT_TRUE((*wa)->Commit().ok());
  }
  {
    absl::StatusOr<std::unique_ptr<SessionFileWriter>> wb = SessionFileWriter::Create(path);
    ASSERT_TRUE(wb.ok()) << wb.status();
    for (const v1::SessionChunk& c : b) ASSERT_TRUE((*wb)->Add(c).ok());
    EXPECT_EQ(Entries(dir).size(), 2u);
  }  // never committed
  EXPECT_EQ(Read(path), FileOf(a));
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"s.f2obo"});
  std::filesystem::remove_all(dir);
}

TEST(SessionFile, ACommittedExportHasTheModeOfAnOrdinaryFile) {
  const std::string dir = TempDir();
  const std::string path = dir + "/s.f2obo";
  const mode_t mask = umask(022);
  absl::StatusOr<std::unique_ptr<SessionFileWriter>> w = SessionFileWriter::Create(path);
  umask(mask);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const v1::SessionChunk& c : Chunks("m", 1)) ASSERT_TRUE((*w)->Add(c).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  std::filesystem::remove_all(dir);
}

TEST(SessionFile, CommitBeforeTheEndChunkIsRefusedAndLeavesNoFile) {
  const std::string dir = TempDir();
  const std::string path = dir + "/s.f2obo";
  {
    absl::StatusOr<std::unique_ptr<SessionFileWriter>> w = SessionFileWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status();
    std::vector<v1::SessionChunk> c = Chunks("cut", 2);
    ASSERT_TRUE((*w)->Add(c[0]).ok());
    const absl::Status s = (*w)->Commit();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
  EXPECT_TRUE(Entries(dir).empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace f2obo::client
