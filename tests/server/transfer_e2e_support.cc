#include "tests/server/transfer_e2e_support.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "f2obo/v1/convert.h"
#include "f2obo/v1/transfer_sum.h"

namespace f2obo::transfer_e2e {

const testing::QuadraticTasks& Pool() {
  static const auto* pool = new testing::QuadraticTasks(kPool, kDim, kDim, 7);
  return *pool;
}

std::vector<std::string> Flags(const std::string& name) {
  std::vector<std::string> flags = {"--max_message_bytes=" + std::to_string(kMaxMessage),
                                    "--max_tasks=" + std::to_string(kTasks)};
  if (!name.empty()) flags.push_back("--replica_name=" + name);
  return flags;
}

v1::CreateSessionRequest Create(const std::string& id) {
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  v1::SessionSpec& spec = *req.mutable_spec();
  spec.set_problem_class("multitask_bilevel");
  spec.mutable_family()->set_name("multitask_quadratic");
  spec.mutable_family()->set_x_dim(kDim);
  spec.mutable_family()->set_y_dim(kDim);
  spec.mutable_family()->set_tasks(kTasks);
  spec.set_algorithm("rsvrb");
  spec.set_seed(5);
  spec.mutable_metrics()->set_exact_every(0);
  return req;
}

v1::StepRequest Request(const std::string& id, int64_t t, const std::vector<int>& tasks) {
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  for (int task : tasks) {
    TaskData d = Pool().Task(task % kPool);
    d.task = task;
    ToProto(d, req.add_tasks());
  }
  return req;
}

// Creates session `id` on `c` and touches kTouched tasks; returns next_t.
int64_t Grow(client::Client& c, const std::string& id) {
  EXPECT_TRUE(c.CreateSession(Create(id)).ok());
  int64_t t = 1;
  for (int first = 0; first < kTouched; first += kPerStep) {
    std::vector<int> tasks;
    for (int k = first; k < first + kPerStep; ++k) tasks.push_back(k * (kTasks / kTouched));
    const absl::StatusOr<v1::StepReply> r = c.Step(Request(id, t++, tasks));
    EXPECT_TRUE(r.ok()) << r.status();
  }
  return t;
}

// Step t after the growth: tasks touched before and one new.
std::vector<int> Later(int64_t t) {
  return {static_cast<int>(t * 37 % kTasks), static_cast<int>(t * 101 % kTasks), 1 + 2 * (int)t};
}

bool SameBits(const google::protobuf::RepeatedField<double>& a,
              const google::protobuf::RepeatedField<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

Export ExportOf(client::Client& c, const std::string& id) {
  Export out;
  const absl::Status s = client::ExportSessionChunks(c, id, [&](const v1::SessionChunk& chunk) {
    out.chunks.push_back(chunk);
    out.largest = std::max(out.largest, chunk.ByteSizeLong());
    for (const v1::StateSlice& slice : chunk.slices()) out.state += slice.data();
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// A source giving `chunks` in order.
client::ChunkSource From(const std::vector<v1::SessionChunk>& chunks) {
  auto next = std::make_shared<size_t>(0);
  return [&chunks, next](v1::SessionChunk* chunk) -> absl::StatusOr<bool> {
    if (*next == chunks.size()) return false;
    *chunk = chunks[(*next)++];
    return true;
  };
}

// Recomputes the end chunk's checksum after a change of content (so that a
// test reaches the checks behind it).
void Reseal(std::vector<v1::SessionChunk>& chunks) {
  v1::TransferSum sum;
  sum.AddSpec(chunks.front().begin().spec());
  int64_t part = -1;
  for (const v1::SessionChunk& c : chunks) {
    for (const v1::StateSlice& s : c.slices()) {
      if (s.part() != part) sum.BeginPart(part = s.part());
      sum.AddSlice(s.data());
    }
    for (const std::string& r : c.replies()) sum.AddReply(r);
  }
  chunks.back().mutable_end()->set_crc32(sum.value());
}

int FilesIn(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    n += std::string(e->d_name) != "." && e->d_name != std::string("..");
  closedir(d);
  return n;
}

}  // namespace f2obo::transfer_e2e
