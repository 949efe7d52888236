// The store contract (server/store/session_store.h): what every SessionStore
// implementation must do, as parameterized tests over the kinds of store.
//
// The cases (store_contract_test.cc, store_contract_groups_test.cc) are
// compiled once into the object library f2obo_store_contract; each kind of
// store instantiates them in a test binary of its own with one line:
//
//   INSTANTIATE_TEST_SUITE_P(Embedded, StoreContractTest,
//                            ::testing::Values(EmbeddedStoreKind()), StoreKindName);
//
// (store_contract_embedded.cc).  A kind says how to make a new, empty store
// for one test and how to open it (again: a reopened store holds what was
// written before it was closed).
#ifndef F2OBO_TESTS_SERVER_STORE_STORE_CONTRACT_H_
#define F2OBO_TESTS_SERVER_STORE_STORE_CONTRACT_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/state.h"
#include "server/store/session_store.h"

namespace f2obo::server {

// One test's store of one kind; destroyed (with what it stored) after the
// test.
class StoreUnderTest {
 public:
  virtual ~StoreUnderTest() = default;
  // Opens the store; at most one opened store exists at a time (the
  // fixture closes one before opening it again).
  virtual absl::StatusOr<std::unique_ptr<SessionStore>> Open(Durability durability) = 0;
};

struct StoreKind {
  std::string name;  // the test names' suffix: letters, digits, '_'
  // A new, empty store for one test.
  std::function<std::unique_ptr<StoreUnderTest>()> make;
};

// For INSTANTIATE_TEST_SUITE_P: names each instantiation by its kind.
std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info);
// GoogleTest prints a kind by its name.
void PrintTo(const StoreKind& kind, std::ostream* os);

class StoreContractTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override;
  // Closes the store (every write returned is then stored) and opens it
  // again.
  void Reopen(Durability durability = Durability::kSync);
  // LoadAll, asserted to succeed with nothing damaged.
  LoadedStore Load();

  std::unique_ptr<StoreUnderTest> under_test_;
  std::unique_ptr<SessionStore> store_;
};

// Test data.  A session state at step t (next step index t) with `parts`
// aux vectors whose values depend on (t, seed).
SessionState ContractState(int64_t t, double seed, int parts = 0);
// The step indexes of a stored session's cached replies, oldest first.
std::vector<int64_t> ReplySteps(const StoredSession& s);
Checkpoint ContractCheckpoint(const SessionState& s);
std::string WholeBytes(const SessionState& s);  // SerializeCheckpoint
// What a step writes when the parts `changed` differ from the stored state
// (every part: `complete`).
StepState StepStateOf(const SessionState& s, const std::vector<int>& changed,
                      bool complete = false);
v1::SessionSpec ContractSpec(const std::string& id);
v1::StepReply ContractReply(const std::string& id, int64_t t);
// The loaded session `id`, or nullptr.
const StoredSession* Find(const LoadedStore& loaded, const std::string& id);

}  // namespace f2obo::server

#endif  // F2OBO_TESTS_SERVER_STORE_STORE_CONTRACT_H_
