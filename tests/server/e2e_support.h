// Sessions and step data for end-to-end tests: one spec per (family,
// algorithm) and a deterministic stream of batches per family.
#ifndef F2OBO_TESTS_SERVER_E2E_SUPPORT_H_
#define F2OBO_TESTS_SERVER_E2E_SUPPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/batch.h"
#include "core/state.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::testing {

struct FamilyCase {
  std::string name;  // family name, plus "_csr" for sparse features
  v1::FamilySpec family;
  v1::ConstraintSpec constraint;
  bool sparse = false;
};

std::vector<FamilyCase> AllFamilyCases();
std::vector<std::string> AllAlgorithms();

v1::SessionSpec SpecFor(const FamilyCase& f, const std::string& algorithm, uint64_t seed);
// Clears the options `spec`'s algorithm does not read: a spec shared by
// several algorithms sets what applies to each (the server refuses a set
// option its algorithm does not read).  An unknown algorithm keeps them.
void KeepReadOptions(v1::SessionSpec* spec);

// Batches of step t for this family case, identical on every call.
StepData StepFor(const FamilyCase& f, int64_t t);
v1::StepRequest RequestFor(const FamilyCase& f, const std::string& session, int64_t t);

// The core library's state after `steps` uninterrupted steps of `spec` on
// RequestFor's batches, decoded as the server decodes them: what a server
// session must hold after the same steps, bit for bit.  An error names the
// step that failed.
absl::StatusOr<Checkpoint> CoreState(const FamilyCase& f, const v1::SessionSpec& spec,
                                     int64_t steps);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_E2E_SUPPORT_H_
