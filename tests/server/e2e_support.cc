#include "tests/server/e2e_support.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/options_convert.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo::testing {

std::vector<FamilyCase> AllFamilyCases() {
  std::vector<FamilyCase> out;
  FamilyCase q;
  q.name = "quadratic";
  q.family.set_name("quadratic");
  q.family.set_x_dim(3);
  q.family.set_y_dim(4);
  q.constraint.mutable_ball()->set_radius(2.0);
  out.push_back(q);

  FamilyCase r;
  r.name = "ridge_hpo";
  r.family.set_name("ridge_hpo");
  r.family.set_features(5);
  r.constraint.mutable_box()->add_lo(0.0);
  r.constraint.mutable_box()->add_hi(1.0);
  out.push_back(r);

  for (bool sparse : {false, true}) {
    FamilyCase l;
    l.name = sparse ? "logistic_hpo_csr" : "logistic_hpo";
    l.family.set_name("logistic_hpo");
    l.family.set_features(6);
    l.family.set_classes(3);
    l.constraint.mutable_box()->add_lo(0.0);
    l.constraint.mutable_box()->add_hi(0.1);
    l.sparse = sparse;
    out.push_back(l);
  }
  FamilyCase t;
  t.name = "loss_tuning";
  t.family.set_name("loss_tuning");
  t.family.set_features(6);
  t.family.set_classes(3);
  t.constraint.set_unconstrained(true);
  out.push_back(t);
  return out;
}

// Every registered algorithm: a new one joins the e2e and crash tests by
// registering itself.
std::vector<std::string> AllAlgorithms() { return AlgorithmNames(ProblemClass::kBilevel); }

v1::SessionSpec SpecFor(const FamilyCase& f, const std::string& algorithm, uint64_t seed) {
  v1::SessionSpec spec;
  *spec.mutable_family() = f.family;
  spec.set_algorithm(algorithm);
  *spec.mutable_constraint() = f.constraint;
  spec.set_seed(seed);
  spec.mutable_options()->set_gamma(0.01);
  if (algorithm == "af2obo") spec.mutable_options()->set_max_inner_iterations(200);
  return spec;
}

void KeepReadOptions(v1::SessionSpec* spec) {
  absl::StatusOr<std::string> algorithm = AlgorithmOf(*spec);
  const AlgorithmInfo* info = algorithm.ok() ? FindAlgorithm(*algorithm) : nullptr;
  if (info == nullptr) return;
  OptionSet unread;
  for (const OptionInfo& o : OptionTable()) {
    if (!info->reads.Has(o.id)) unread.Add(o.id);
  }
  ClearOptions(unread, spec->mutable_options());
}

StepData StepFor(const FamilyCase& f, int64_t t) {
  std::mt19937_64 rng(1000003 * static_cast<uint64_t>(t) + f.name.size());
  if (f.family.name() == "quadratic") {
    const int d1 = f.family.x_dim(), d2 = f.family.y_dim();
    return QuadraticStep(Matrix(RandomMatrix(d2, d1, rng)) * 0.5, RandomVector(d2, rng),
                         RandomVector(d2, rng));
  }
  if (f.family.name() == "ridge_hpo") {
    const Vector w = Vector::LinSpaced(f.family.features(), -1.0, 1.0);
    return StepData{RegressionBatch(12, w, 0.1, f.sparse, rng),
                    RegressionBatch(20, w, 0.5, f.sparse, rng)};
  }
  return StepData{ClassificationBatch(12, f.family.features(), f.family.classes(), f.sparse, rng),
                  ClassificationBatch(20, f.family.features(), f.family.classes(), f.sparse, rng)};
}

v1::StepRequest RequestFor(const FamilyCase& f, const std::string& session, int64_t t) {
  const StepData s = StepFor(f, t);
  v1::StepRequest req;
  req.set_session_id(session);
  req.set_t(t);
  ToProto(s.upper, req.mutable_upper());
  ToProto(s.inner, req.mutable_inner());
  return req;
}

absl::StatusOr<Checkpoint> CoreState(const FamilyCase& f, const v1::SessionSpec& spec,
                                     int64_t steps) {
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec);
  if (!config.ok()) return config.status();
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*config);
  if (!session.ok()) return session.status();
  for (int64_t t = 1; t <= steps; ++t) {
    const v1::StepRequest req = RequestFor(f, "", t);
    const absl::Status s =
        (*session)
            ->Step(StepData{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")})
            .status();
    if (!s.ok())
      return absl::Status(s.code(), absl::StrCat(f.name, " step ", t, ": ", s.message()));
  }
  return DeserializeCheckpoint((*session)->Encode((*session)->state()));
}

}  // namespace f2obo::testing
