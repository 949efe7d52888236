// Helpers of the transfer e2e tests (transfer_e2e_test.cc,
// transfer_fork_e2e_test.cc): a multi-task session of a few MB on servers
// whose --max_message_bytes is 1 MiB, its steps, and its streamed export.
#ifndef F2OBO_TESTS_SERVER_TRANSFER_E2E_SUPPORT_H_
#define F2OBO_TESTS_SERVER_TRANSFER_E2E_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/session_transfer.h"
#include "tests/core/multitask/multitask_streams.h"

namespace f2obo::transfer_e2e {

inline constexpr int kDim = 4;
inline constexpr int kTasks = 10000;
inline constexpr int kTouched = 4000;  // ~1.9 MB of task blocks (472 bytes each)
inline constexpr int kPerStep = 500;
inline constexpr int kPool = 32;
inline constexpr int64_t kMaxMessage = 1 << 20;

const testing::QuadraticTasks& Pool();
// The servers' flags (and --replica_name=name when given).
std::vector<std::string> Flags(const std::string& name = "");
v1::CreateSessionRequest Create(const std::string& id);
v1::StepRequest Request(const std::string& id, int64_t t, const std::vector<int>& tasks);
// Creates session `id` on `c` and touches kTouched tasks; returns next_t.
int64_t Grow(client::Client& c, const std::string& id);
// Step t after the growth: tasks touched before and one new.
std::vector<int> Later(int64_t t);
bool SameBits(const google::protobuf::RepeatedField<double>& a,
              const google::protobuf::RepeatedField<double>& b);

struct Export {
  std::vector<v1::SessionChunk> chunks;
  std::string state;   // every slice's data, in order
  size_t largest = 0;  // the largest chunk's encoding
};
Export ExportOf(client::Client& c, const std::string& id);
// A source giving `chunks` in order.
client::ChunkSource From(const std::vector<v1::SessionChunk>& chunks);
// Recomputes the end chunk's checksum after a change of content (so that a
// test reaches the checks behind it).
void Reseal(std::vector<v1::SessionChunk>& chunks);
int FilesIn(const std::string& dir);

}  // namespace f2obo::transfer_e2e

#endif  // F2OBO_TESTS_SERVER_TRANSFER_E2E_SUPPORT_H_
