#include "core/algorithm_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/algorithms/af2obo.h"
#include "core/algorithms/aobo.h"
#include "core/algorithms/f2obo.h"
#include "core/algorithms/fsobo.h"
#include "core/algorithms/obbo.h"
#include "core/algorithms/pzobo.h"
#include "core/algorithms/sf2obo.h"
#include "core/algorithms/sobbo.h"
#include "core/algorithms/sobow.h"
#include "core/algorithms/sogd.h"
#include "core/algorithms/svrb.h"

namespace f2obo {
namespace {

struct Entry {
  const char* name;
  absl::StatusOr<std::unique_ptr<Algorithm>> (*create)(const AlgorithmContext&);
  void (*defaults)(AlgorithmOptions*);  // may be null
  absl::Status (*extra_check)(const AlgorithmOptions&);  // may be null
  // Whether its rounds read SessionState::lambda (the penalty methods);
  // a restored state must then carry a usable one.
  bool reads_lambda;
};

void SingleLoopDefaults(AlgorithmOptions* o) {
  o->inner_steps = 1;
  o->tau = 1.0 / 3.0;  // Theorem 3.2 needs tau in (0, 1/2); Eq. (8) uses 1/3
}
absl::Status SingleLoopCheck(const AlgorithmOptions& o) {
  if (o.inner_steps != 1) {
    return absl::InvalidArgumentError(
        "options.inner_steps: f2obo_sl is single-loop, K must be 1");
  }
  return absl::OkStatus();
}
void StochasticDefaults(AlgorithmOptions* o) {
  o->tau = 1.0 / 6.0;  // Corollary 5.2 (with b = 1/6 so beta_t lambda_t stays bounded)
}

constexpr Entry kAlgorithms[] = {
    {"f2obo", &CreateF2obo, nullptr, nullptr, true},
    {"f2obo_sl", &CreateF2obo, &SingleLoopDefaults, &SingleLoopCheck, true},
    {"af2obo", &CreateAf2obo, nullptr, nullptr, true},
    {"sf2obo", &CreateSf2obo, &StochasticDefaults, nullptr, true},
    {"obbo", &CreateObbo, nullptr, nullptr, false},
    {"sobow", &CreateSobow, &SobowDefaults, nullptr, false},
    {"aobo", &CreateAobo, nullptr, nullptr, false},
    {"fsobo", &CreateFsobo, &FsoboDefaults, &FsoboCheck, false},
    {"sobbo", &CreateSobbo, &SobboDefaults, nullptr, false},
    {"sogd", &CreateSogd, nullptr, nullptr, false},
    {"svrb", &CreateSvrb, nullptr, nullptr, false},
    {"pzobo", &CreatePzobo, nullptr, nullptr, false},
    {"pzobo_s", &CreatePzobo, nullptr, nullptr, false},
};

const Entry* Find(const std::string& name) {
  for (const Entry& e : kAlgorithms)
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

AlgorithmOptions DefaultAlgorithmOptions(const std::string& algorithm) {
  AlgorithmOptions o;
  const Entry* e = Find(algorithm);
  if (e != nullptr && e->defaults != nullptr) e->defaults(&o);
  return o;
}

absl::StatusOr<std::unique_ptr<Algorithm>> CreateAlgorithm(const AlgorithmContext& ctx) {
  const Entry* e = Find(ctx.name);
  if (e == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("algorithm: unknown algorithm '", ctx.name,
                     "'; known: ", absl::StrJoin(AlgorithmNames(), ", ")));
  }
  if (absl::Status s = ctx.options.Validate(ctx.name); !s.ok()) return s;
  if (e->extra_check != nullptr) {
    if (absl::Status s = e->extra_check(ctx.options); !s.ok()) return s;
  }
  return e->create(ctx);
}

bool AlgorithmReadsLambda(const std::string& name) {
  const Entry* e = Find(name);
  return e != nullptr && e->reads_lambda;
}

std::vector<std::string> AlgorithmNames() {
  std::vector<std::string> names;
  for (const Entry& e : kAlgorithms) names.emplace_back(e.name);
  return names;
}

}  // namespace f2obo
