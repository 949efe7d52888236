#include "tests/server/store/store_contract.h"

#include <utility>

namespace f2obo::server {

std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info) {
  return info.param.name;
}

void PrintTo(const StoreKind& kind, std::ostream* os) { *os << kind.name; }

void StoreContractTest::SetUp() {
  under_test_ = GetParam().make();
  ASSERT_NE(under_test_, nullptr) << "no " << GetParam().name << " store to test";
  absl::StatusOr<std::unique_ptr<SessionStore>> store = under_test_->Open(Durability::kSync);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = *std::move(store);
}

void StoreContractTest::Reopen(Durability durability) {
  store_.reset();
  absl::StatusOr<std::unique_ptr<SessionStore>> store = under_test_->Open(durability);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = *std::move(store);
}

LoadedStore StoreContractTest::Load() {
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return {};
  EXPECT_TRUE(loaded->damaged.empty()) << ::testing::PrintToString(loaded->damaged);
  return *std::move(loaded);
}

std::vector<int64_t> ReplySteps(const StoredSession& s) {
  std::vector<int64_t> out;
  for (const v1::StepReply& r : s.replies) out.push_back(r.t());
  return out;
}

SessionState ContractState(int64_t t, double seed, int parts) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(5, seed + static_cast<double>(t));
  s.vectors = {Vector::Constant(3, -seed), Vector::Constant(2, seed / 3.0)};
  s.scalars = {0.25 * static_cast<double>(t)};
  for (int i = 0; i < parts; ++i) {
    s.aux.push_back((Vector(3) << i, static_cast<double>(t), seed).finished());
  }
  return s;
}

Checkpoint ContractCheckpoint(const SessionState& s) {
  return Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}};
}

std::string WholeBytes(const SessionState& s) { return SerializeCheckpoint(ContractCheckpoint(s)); }

StepState StepStateOf(const SessionState& s, const std::vector<int>& changed, bool complete) {
  StepState out;
  out.head = SerializeCheckpointHead(ContractCheckpoint(s));
  out.aux_count = static_cast<int64_t>(s.aux.size());
  out.complete = complete;
  for (int i : changed) out.aux_rows.emplace_back(i, EncodeAuxPart(s.aux[i]));
  return out;
}

v1::SessionSpec ContractSpec(const std::string& id) {
  v1::SessionSpec spec;
  spec.set_algorithm("f2obo");
  spec.mutable_family()->set_name("quadratic");
  spec.add_x0(static_cast<double>(id.size()));
  return spec;
}

v1::StepReply ContractReply(const std::string& id, int64_t t) {
  v1::StepReply r;
  r.set_session_id(id);
  r.set_t(t);
  r.add_x(static_cast<double>(t) / 7.0);
  return r;
}

const StoredSession* Find(const LoadedStore& loaded, const std::string& id) {
  for (const StoredSession& s : loaded.sessions) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

}  // namespace f2obo::server
