// Writes the seed corpus of step_fuzzer: for every family case and every
// algorithm, a valid (spec, step) pair in each mode (plain, two-phase with
// exact metrics, several rounds, import of an exported session), plus a few
// refused ones (NaN, wrong shape, over the limits, damaged export).  Every
// seed is run through the harness once; a valid seed that is not applied
// fails the tool, so the corpus cannot silently rot.
//
//   make_corpus <output dir>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/problem_registry.h"
#include "fuzz/step_harness.h"
#include "server/metrics_pipeline.h"
#include "server/session_manager.h"
#include "tests/server/e2e_support.h"

namespace f2obo::fuzz {
namespace {

const std::vector<std::string>& Algorithms() {
  static const std::vector<std::string> all = {"f2obo", "f2obo_sl", "af2obo", "sf2obo", "obbo",
                                               "sobow", "aobo",     "fsobo",  "sobbo",  "sogd"};
  return all;
}

v1::SessionSpec Spec(const testing::FamilyCase& f, const std::string& algorithm) {
  v1::SessionSpec spec = testing::SpecFor(f, algorithm, /*seed=*/7);
  spec.mutable_options()->set_max_inner_iterations(40);  // under FuzzLimits()
  testing::KeepReadOptions(&spec);                       // (only af2obo and aobo read it)
  return spec;
}

// An export of `spec` after `steps` rounds, made by the server's manager.
v1::SessionExport ExportAfter(const testing::FamilyCase& f, const v1::SessionSpec& spec,
                              int steps) {
  server::MetricsPipeline pipeline(1, 16, nullptr);
  server::SessionManager mgr(FuzzLimits(), &pipeline, nullptr);
  v1::CreateSessionRequest create;
  create.set_session_id("seed");
  *create.mutable_spec() = spec;
  create.mutable_spec()->mutable_metrics()->set_exact_every(0);
  if (absl::Status s = mgr.Create(create).status(); !s.ok()) {
    std::fprintf(stderr, "make_corpus: create for export: %s\n", s.ToString().c_str());
    return {};
  }
  for (int t = 1; t <= steps; ++t) {  // a new session expects t = 1
    if (absl::Status s = mgr.Step(testing::RequestFor(f, "seed", t)).status(); !s.ok()) {
      std::fprintf(stderr, "make_corpus: step for export: %s\n", s.ToString().c_str());
      return {};
    }
  }
  absl::StatusOr<v1::SessionExport> ex = mgr.Export("seed");
  pipeline.Stop();
  return ex.ok() ? *ex : v1::SessionExport();
}

struct Writer {
  std::string dir;
  int written = 0;
  int failures = 0;

  void Add(const std::string& name, const std::string& bytes, bool must_apply) {
    const Result r = RunInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (must_apply && r.outcome != Outcome::kApplied) {
      std::fprintf(stderr, "make_corpus: seed %s was not applied: %s\n", name.c_str(),
                   r.first_error.c_str());
      ++failures;
    }
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << bytes;
    if (!out) {
      std::fprintf(stderr, "make_corpus: cannot write %s/%s\n", dir.c_str(), name.c_str());
      ++failures;
    }
    ++written;
  }
};

}  // namespace
}  // namespace f2obo::fuzz

int main(int argc, char** argv) {
  using namespace f2obo;
  using namespace f2obo::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus <output dir>\n");
    return 2;
  }
  Writer w{argv[1]};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const testing::FamilyCase& f : testing::AllFamilyCases()) {
    const v1::StepRequest step0 = testing::RequestFor(f, "", 0);
    const v1::StepRequest step1 = testing::RequestFor(f, "", 1);
    for (const std::string& a : Algorithms()) {
      const std::string base = f.name + "-" + a;
      const v1::SessionSpec spec = Spec(f, a);
      w.Add(base + "-plain", EncodeInput(0, spec, step0), true);
      w.Add(base + "-twophase-exact-3rounds",
            EncodeInput(kTwoPhase | kExactMetrics | 2, spec, step0), true);
      w.Add(base + "-rawdecode-2rounds", EncodeInput(kRawDecode | 1, spec, step0), true);
      const v1::SessionExport ex = ExportAfter(f, spec, 1);
      w.Add(base + "-import", EncodeInput(kImport, ex, step1), true);
      w.Add(base + "-import-fixsum-2rounds", EncodeInput(kImport | kFixChecksum | 1, ex, step1),
            true);
    }
    // The simple bilevel class on the same rows (targets for least_squares,
    // labels for logistic), over an l1 ball.  (linear_inverse refuses the
    // upper rows these steps carry; its rows are fuzzed from these seeds'
    // mutations of the family name.)
    const std::vector<std::string> simple_families =
        f.name == "ridge_hpo"              ? std::vector<std::string>{"least_squares"}
        : f.name.rfind("logistic", 0) == 0 ? std::vector<std::string>{"logistic"}
                                           : std::vector<std::string>{};
    for (const std::string& family : simple_families) {
      for (const std::string& a : AlgorithmNames(ProblemClass::kSimpleBilevel)) {
        v1::SessionSpec spec;
        *spec.mutable_family() = f.family;
        spec.mutable_family()->set_name(family);
        spec.set_algorithm(a);
        spec.mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
        spec.set_seed(7);
        const std::string base = f.name + "-" + family + "-" + a;
        w.Add(base + "-plain", EncodeInput(0, spec, step0), true);
        w.Add(base + "-twophase-exact-3rounds",
              EncodeInput(kTwoPhase | kExactMetrics | 2, spec, step0), true);
        const v1::SessionExport ex = ExportAfter(f, spec, 1);
        w.Add(base + "-import", EncodeInput(kImport, ex, step1), true);
      }
    }
    // Refused inputs next to the valid ones: the mutator starts from both.
    const v1::SessionSpec spec = Spec(f, "f2obo");
    v1::StepRequest bad = step0;
    if (bad.inner().has_dense() && bad.inner().dense().values_size() > 0) {
      bad.mutable_inner()->mutable_dense()->set_values(0, nan);
    } else if (bad.inner().has_csr() && bad.inner().csr().values_size() > 0) {
      bad.mutable_inner()->mutable_csr()->set_values(0, nan);
    }
    w.Add(f.name + "-nan", EncodeInput(0, spec, bad), false);
    v1::StepRequest shape = step0;
    if (shape.upper().has_dense()) {
      shape.mutable_upper()->mutable_dense()->set_cols(shape.upper().dense().cols() + 1);
    }
    w.Add(f.name + "-shape", EncodeInput(0, spec, shape), false);
    v1::SessionSpec big = spec;
    big.mutable_family()->set_features(1 << 20);
    big.mutable_family()->set_x_dim(1 << 20);
    w.Add(f.name + "-too-big", EncodeInput(0, big, step0), false);
    v1::SessionExport damaged = ExportAfter(f, spec, 1);
    if (!damaged.state().empty()) (*damaged.mutable_state())[damaged.state().size() / 2] ^= 1;
    w.Add(f.name + "-import-damaged", EncodeInput(kImport, damaged, step1), false);
  }
  std::printf("make_corpus: %d seeds in %s, %d failures\n", w.written, argv[1], w.failures);
  return w.failures == 0 ? 0 : 1;
}
