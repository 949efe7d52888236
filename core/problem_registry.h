// The problem classes the core serves (SPEC section 9), with their families
// and algorithms.  A class is one folder and one line in each layer's list:
//   core/<class>/                    its Problem, state, families, algorithms,
//                                    report, metrics and ProblemClassEntry
//                                    (beside its Problem); what classes
//                                    share: core/hypergradients, core/kernels
//   core/problem_classes.h           its line in AllProblemClasses (and its
//                                    id in core/problem_class.h), from which
//                                    ClassReport, ClassMetrics and
//                                    ProblemClasses() follow
//   proto/f2obo/v1/<class>_wire.cc   its ClassWire (report and metrics on the
//                                    wire), one line in class_wire.cc
//   server/presentation/<class>_presentation.cc  its Prometheus series and
//                                    dashboard fields, one line in
//                                    class_presentation.cc
// A class missing from a layer's list is an error, not a fallback
// (tests/server/class_entries_test.cc walks the core's list and asks the
// others for each class).
#ifndef F2OBO_CORE_PROBLEM_REGISTRY_H_
#define F2OBO_CORE_PROBLEM_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/algorithm_info.h"
#include "core/constraint.h"
#include "core/family_config.h"
#include "core/problem.h"
#include "core/problem_class.h"
#include "core/session_config.h"

namespace f2obo {

struct ProblemClassEntry {
  ProblemClass id;
  const char* name;     // the wire's SessionSpec.problem_class
  const char* summary;  // one line
  const char* default_algorithm;
  // Why it is the default, with the evidence (`f2obo-cli algorithms`).
  const char* default_why;
  // The default for the class's oracle family (f and g on the client, its
  // rows never on the server: core/oracle.h), which cannot run an algorithm
  // that keeps rows; equal to default_algorithm where that one serves it.
  const char* oracle_default_algorithm;
  std::vector<std::string> (*family_names)();
  std::vector<const AlgorithmInfo*> (*algorithms)();
  // Builds the session's family and algorithm; INVALID_ARGUMENT naming the
  // field for an unknown family, bad dimensions, a bad constraint set or
  // options the algorithm refuses.
  absl::StatusOr<std::unique_ptr<Problem>> (*create)(const SessionConfig&);
  // Whether the class's family `config` names classifies rows
  // (FamilyIsClassification below); FamilyClassifies<its factory>.
  absl::StatusOr<bool> (*family_is_classification)(const FamilyConfig&);
};

// For a class's entry: asks the family that `Create` builds from `config`.
template <auto Create>
absl::StatusOr<bool> FamilyClassifies(const FamilyConfig& config) {
  auto family = Create(config);
  if (!family.ok()) return family.status();
  return (*family)->is_classification();
}

// Every class's entry (each defined in the class's folder), in the order
// of core/problem_classes.h's list, which is ProblemClass order.
const std::vector<ProblemClassEntry>& ProblemClasses();
const ProblemClassEntry& GetProblemClass(ProblemClass c);
// INVALID_ARGUMENT "problem_class: ..." listing the known names.
absl::StatusOr<ProblemClass> ParseProblemClass(absl::string_view name);
// The class whose registry holds `family`; INVALID_ARGUMENT "family.name:
// ..." listing every family by class if none does.
absl::StatusOr<ProblemClass> ClassOfFamily(absl::string_view family);

// The algorithm of a session of `family` (in class `c`) that names none:
// the class's default, or its oracle default for an oracle family.
absl::string_view DefaultAlgorithm(ProblemClass c, absl::string_view family);

// Any class's algorithm by name (nullptr if none).
const AlgorithmInfo* FindAlgorithm(absl::string_view name);
// The defaults of `algorithm` (the generic ones for an unknown name).
AlgorithmOptions DefaultAlgorithmOptions(absl::string_view algorithm);
std::vector<std::string> AlgorithmNames(ProblemClass c);
// `algorithm` must belong to class `c` and accept `options`; the error
// names the field (algorithm, or options.<name>) and, for an algorithm of
// another class, says which.
absl::StatusOr<const AlgorithmInfo*> CheckAlgorithm(ProblemClass c, absl::string_view algorithm,
                                                    const AlgorithmOptions& options);

// Options a session sets (`set`: fields present on the wire) that its
// algorithm does not read would be dropped without a word; they are refused
// instead (a user who sets an option expects it to act).
// INVALID_ARGUMENT "<field>.<name>: not read by algorithm '<a>' ..." for
// the first one, saying which algorithms of class `c` read it; `by_default`
// = the spec named no algorithm (the class's default for `family`).  OK for
// an algorithm that is unknown or of another class (CheckAlgorithm says so).
absl::Status CheckOptionsRead(ProblemClass c, absl::string_view family, absl::string_view algorithm,
                              bool by_default, const OptionSet& set,
                              absl::string_view field = "options");

// `options` against the rules and check of `algorithm` (any class);
// INVALID_ARGUMENT for an unknown algorithm too.
absl::Status ValidateOptionsFor(absl::string_view algorithm, const AlgorithmOptions& options);

// Whether the family of `config` (in `config.problem_class`) classifies
// rows, reading labels in [0, classes): what a client asks before it
// treats a dataset's integer column as classes (class-imbalance sampling,
// label noise, --classes) rather than as regression targets.  Builds the
// family to ask it (is_classification()), so the answer has one home;
// INVALID_ARGUMENT as CreateProblem for a family that cannot be built.
absl::StatusOr<bool> FamilyIsClassification(const SessionConfig& config);

// The feasible set X (Z) of a session of `family` whose spec gives none:
// the one home of this default, applied by the server to every client's
// spec.  logistic_hpo: the box [0, 0.1]^d of the paper's Sec. 6.1 (its g
// needs lo > -mu0); ridge_hpo: [0, 1]^d (likewise); their multi-task
// versions the same; every other family (any class): unconstrained.
ConstraintSet DefaultConstraint(absl::string_view family);

// The class's Problem for `config` (family, algorithm, constraint checked).
absl::StatusOr<std::unique_ptr<Problem>> CreateProblem(const SessionConfig& config);

}  // namespace f2obo

#endif  // F2OBO_CORE_PROBLEM_REGISTRY_H_
