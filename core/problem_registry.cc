#include "core/problem_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/oracle.h"
#include "core/problem_classes.h"

namespace f2obo {

const std::vector<ProblemClassEntry>& ProblemClasses() {
  static const auto* classes = [] {
    auto* all = new std::vector<ProblemClassEntry>;
    for (const ProblemClassEntry* e : AllProblemClasses::Entries()) all->push_back(*e);
    return all;
  }();
  return *classes;
}

namespace {

// By id, not by position: a class's entry may be registered in another
// order than the enum's.  nullptr for a class without an entry (never
// another class's entry: tests/server/class_entries_test.cc requires one
// for every class).
const ProblemClassEntry* FindEntry(ProblemClass c) {
  for (const ProblemClassEntry& e : ProblemClasses()) {
    if (e.id == c) return &e;
  }
  return nullptr;
}

}  // namespace

// Reached only with a class parsed by name or of a registered family, which
// has its entry; a class without one is a programming error, not data.
const ProblemClassEntry& GetProblemClass(ProblemClass c) {
  const ProblemClassEntry* e = FindEntry(c);
  if (e == nullptr) {
    std::fprintf(stderr, "f2obo: problem class %d has no entry in core/problem_registry.cc\n",
                 static_cast<int>(c));
    std::abort();
  }
  return *e;
}

absl::string_view ProblemClassName(ProblemClass c) {
  const ProblemClassEntry* e = FindEntry(c);
  return e != nullptr ? e->name : "unregistered_class";
}

absl::StatusOr<ProblemClass> ParseProblemClass(absl::string_view name) {
  std::vector<std::string> names;
  for (const ProblemClassEntry& e : ProblemClasses()) {
    if (name == e.name) return e.id;
    names.emplace_back(e.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("problem_class: unknown class '", name,
                                                 "'; known: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<ProblemClass> ClassOfFamily(absl::string_view family) {
  std::vector<std::string> known;
  for (const ProblemClassEntry& e : ProblemClasses()) {
    const std::vector<std::string> names = e.family_names();
    if (std::find(names.begin(), names.end(), family) != names.end()) return e.id;
    known.push_back(absl::StrCat(e.name, ": ", absl::StrJoin(names, ", ")));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("family.name: unknown family '", family,
                   "'; known (by problem class): ", absl::StrJoin(known, "; ")));
}

absl::string_view DefaultAlgorithm(ProblemClass c, absl::string_view family) {
  const ProblemClassEntry& e = GetProblemClass(c);
  return IsOracleFamily(std::string_view(family.data(), family.size())) ? e.oracle_default_algorithm
                                                                        : e.default_algorithm;
}

const AlgorithmInfo* FindAlgorithm(absl::string_view name) {
  for (const ProblemClassEntry& e : ProblemClasses()) {
    for (const AlgorithmInfo* info : e.algorithms()) {
      if (name == info->name) return info;
    }
  }
  return nullptr;
}

AlgorithmOptions DefaultAlgorithmOptions(absl::string_view algorithm) {
  const AlgorithmInfo* info = FindAlgorithm(algorithm);
  return info != nullptr ? DefaultOptions(*info) : AlgorithmOptions{};
}

std::vector<std::string> AlgorithmNames(ProblemClass c) {
  std::vector<std::string> names;
  const ProblemClassEntry* e = FindEntry(c);
  if (e == nullptr) return names;
  for (const AlgorithmInfo* info : e->algorithms()) names.emplace_back(info->name);
  return names;
}

absl::StatusOr<const AlgorithmInfo*> CheckAlgorithm(ProblemClass c, absl::string_view algorithm,
                                                    const AlgorithmOptions& options) {
  const AlgorithmInfo* info = FindAlgorithm(algorithm);
  if (info == nullptr || info->problem_class != c) {
    const std::string known = absl::StrJoin(AlgorithmNames(c), ", ");
    if (algorithm.empty()) {  // a SessionConfig built without one (the wire fills it)
      return absl::InvalidArgumentError(
          absl::StrCat("algorithm: none named; ", ProblemClassName(c), " algorithms: ", known,
                       " (the class default is ", GetProblemClass(c).default_algorithm, ")"));
    }
    if (info != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("algorithm: '", algorithm, "' is a ", ProblemClassName(info->problem_class),
                       " algorithm, and this session's problem class is ", ProblemClassName(c),
                       "; its algorithms: ", known));
    }
    return absl::InvalidArgumentError(absl::StrCat("algorithm: unknown algorithm '", algorithm,
                                                   "'; ", ProblemClassName(c),
                                                   " algorithms: ", known));
  }
  if (absl::Status s = ValidateAlgorithmOptions(*info, options); !s.ok()) return s;
  return info;
}

absl::Status CheckOptionsRead(ProblemClass c, absl::string_view family, absl::string_view algorithm,
                              bool by_default, const OptionSet& set, absl::string_view field) {
  const AlgorithmInfo* info = FindAlgorithm(algorithm);
  if (info == nullptr || info->problem_class != c) return absl::OkStatus();
  for (const OptionInfo& o : OptionTable()) {
    if (!set.Has(o.id) || info->reads.Has(o.id)) continue;
    std::vector<std::string> readers;
    for (const AlgorithmInfo* other : GetProblemClass(c).algorithms()) {
      if (other->reads.Has(o.id)) readers.emplace_back(other->name);
    }
    std::string which = absl::StrCat("algorithm '", algorithm, "'");
    if (by_default) {
      const bool oracle = algorithm != GetProblemClass(c).default_algorithm;
      absl::StrAppend(&which, " (the ", ProblemClassName(c), " class default",
                      oracle ? absl::StrCat(" for family '", family, "'") : "", ")");
    }
    std::string fix;
    if (readers.empty()) {
      fix = absl::StrCat("no ", ProblemClassName(c), " algorithm reads it; leave it unset");
    } else if (readers.size() == 1) {
      fix = absl::StrCat("name algorithm '", readers[0], "' or leave it unset");
    } else {
      fix = absl::StrCat("name an algorithm that reads it (", absl::StrJoin(readers, ", "),
                         ") or leave it unset");
    }
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".", o.name, ": not read by ", which, "; ", fix));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptionsFor(absl::string_view algorithm, const AlgorithmOptions& options) {
  const AlgorithmInfo* info = FindAlgorithm(algorithm);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("algorithm: unknown algorithm '", algorithm, "'"));
  }
  return ValidateAlgorithmOptions(*info, options);
}

absl::StatusOr<bool> FamilyIsClassification(const SessionConfig& config) {
  const ProblemClassEntry* e = FindEntry(config.problem_class);
  if (e == nullptr) return absl::InvalidArgumentError("problem_class: unknown");
  return e->family_is_classification(config.family);
}

ConstraintSet DefaultConstraint(absl::string_view family) {
  absl::ConsumePrefix(&family, "multitask_");  // a multi-task family: its base's
  if (family == "logistic_hpo") return ConstraintSet::Box(0.0, 0.1);
  if (family == "ridge_hpo") return ConstraintSet::Box(0.0, 1.0);
  return ConstraintSet();
}

absl::StatusOr<std::unique_ptr<Problem>> CreateProblem(const SessionConfig& config) {
  const ProblemClassEntry* e = FindEntry(config.problem_class);
  if (e == nullptr) {
    return absl::InternalError(absl::StrCat("problem class ",
                                            static_cast<int>(config.problem_class),
                                            " has no entry in core/problem_registry.cc"));
  }
  return e->create(config);
}

}  // namespace f2obo
