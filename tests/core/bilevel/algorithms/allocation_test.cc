// Proves that an inner iteration never touches the heap: a warmed-up round
// with K = 50 inner iterations makes exactly as many allocations as one with
// K = 5 on identically shaped data, so the allocations a round does make
// (a handful per Session::Step, e.g. the report's hypergradient) are per
// round, and none is per inner iteration.
//
// Method: this binary interposes the C allocation functions.  glibc lets the
// executable define malloc & co. (shared libraries, including libstdc++'s
// operator new and Eigen's std::malloc, resolve to them), and exports the
// real allocator as __libc_*; ours forward there and count calls made while
// the calling thread's `t_counting` flag is on.  free is left to glibc.
// Two controls keep the equality tests from passing vacuously: the counter
// must see operator new, Eigen and malloc/realloc, and a family planted with
// one allocation per gradient call must make the K = 5 and K = 50 counts
// differ.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* ptr, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
}

namespace {
std::atomic<long> g_allocations{0};
thread_local bool t_counting = false;
inline void Note() {
  if (t_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(std::size_t size) noexcept {
  Note();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  Note();
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, std::size_t size) noexcept {
  Note();
  return __libc_realloc(ptr, size);
}
void* memalign(std::size_t alignment, std::size_t size) noexcept {
  Note();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  Note();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  Note();
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

namespace f2obo {
namespace {

// Counts the allocations made by the calling thread while `fn` runs.
template <typename Fn>
long CountAllocations(Fn&& fn) {
  g_allocations.store(0);
  t_counting = true;
  fn();
  t_counting = false;
  return g_allocations.load();
}

void* volatile g_sink;  // defeats new/delete elision in the sanity test

TEST(AllocationCounter, CountsOperatorNewEigenMallocAndRealloc) {
  const long by_new = CountAllocations([] { g_sink = new std::vector<int>(10); });
  EXPECT_EQ(by_new, 2) << "the vector object and its buffer";
  delete static_cast<std::vector<int>*>(g_sink);
  const long by_eigen = CountAllocations([] {
    Vector v(1000);
    g_sink = v.data();
  });
  EXPECT_EQ(by_eigen, 1);
  const long by_malloc = CountAllocations([] {
    g_sink = std::malloc(64);
    g_sink = std::realloc(g_sink, 4096);
  });
  EXPECT_EQ(by_malloc, 2);
  std::free(g_sink);
  EXPECT_EQ(CountAllocations([] { g_sink = nullptr; }), 0);
}

// A family with its stream of identically shaped steps.
struct Problem {
  FamilyConfig family;
  ConstraintSet constraint;
  std::vector<StepData> steps;
};

constexpr int kWarmSteps = 4;  // steps before the counted one

Problem MakeProblem(const std::string& kind) {
  std::mt19937_64 rng(2026);
  Problem p;
  p.family.name = kind == "quadratic" || kind == "ridge_hpo" ? kind
                  : kind == "loss_tuning_dense"              ? "loss_tuning"
                                                             : "logistic_hpo";
  p.family.features = kind == "logistic_hpo_csr" ? 300 : 12;
  p.family.classes = 4;
  p.family.x_dim = 6;
  p.family.y_dim = 8;
  p.constraint = kind == "quadratic"           ? ConstraintSet::Ball(2.0)
                 : kind == "loss_tuning_dense" ? ConstraintSet::Box(0.5, 2.0)
                                               : ConstraintSet::Box(0.0, 0.1);
  const Vector w = testing::RandomVector(12, rng);
  for (int s = 0; s <= kWarmSteps; ++s) {
    StepData step;
    if (kind == "quadratic") {
      step = testing::QuadraticStep(testing::WellConditioned(8, 6, 0.5, 2.0, rng),
                                    testing::RandomVector(8, rng), testing::RandomVector(8, rng));
    } else if (kind == "ridge_hpo") {
      step.inner = testing::RegressionBatch(64, w, 0.5, false, rng);
      step.upper = testing::RegressionBatch(48, w, 0.1, false, rng);
    } else if (kind == "logistic_hpo_csr") {
      std::uniform_int_distribution<int> label(0, 3);
      for (Batch* b : {&step.inner, &step.upper}) {
        b->sparse_features = true;
        b->csr = testing::RandomCsr(64, 300, 0.05, rng);
        b->labels.resize(64);
        for (int32_t& l : b->labels) l = label(rng);
      }
    } else {  // logistic_hpo_dense, loss_tuning_dense
      step.inner = testing::ClassificationBatch(64, 12, 4, false, rng);
      step.upper = testing::ClassificationBatch(48, 12, 4, false, rng);
    }
    p.steps.push_back(std::move(step));
  }
  return p;
}

// Inner-loop length: K for f2obo / sf2obo; for af2obo, loose tolerances
// (the loops stop at once) versus tight ones (they run to the cap of 50).
// The second-order baselines: K (obbo, sobow, sobbo) or delta (aobo), and
// M linear-system steps (sobow, aobo) likewise 5 versus 50.
SessionConfig RoundConfig(const std::string& algorithm, const Problem& p, bool many) {
  SessionConfig c = testing::ConfigFor(algorithm, p.family, p.constraint);
  c.seed = 5;
  c.options.inner_steps = many ? 50 : 5;
  c.options.max_inner_iterations = 50;
  c.options.delta_y = c.options.delta_z = many ? 1e-14 : 1e6;
  c.options.batch_scale = 8.0;  // sf2obo: mini-batches smaller than the batch
  c.options.delta = many ? 1e-14 : 1e6;
  c.options.linear_system_steps = many ? 50 : 5;
  c.options.sample_rows = 8;  // sobbo: mini-batches smaller than the batch
  return c;
}

struct Counted {
  long allocations = 0;
  int inner_iterations = 0;  // z + y iterations of the counted round
  int64_t rows = 0;
};

// Warms a session with kWarmSteps steps, then counts one Session::Step.
Counted WarmThenCountOneStep(const SessionConfig& config, const Problem& p) {
  Counted out;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return out;
  for (int s = 0; s < kWarmSteps; ++s) {
    absl::StatusOr<StepReport> r = (*session)->Step(p.steps[s]);
    EXPECT_TRUE(r.ok()) << r.status();
  }
  absl::StatusOr<StepReport> report = absl::InternalError("not run");
  out.allocations = CountAllocations([&] { report = (*session)->Step(p.steps[kWarmSteps]); });
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) {
    out.inner_iterations = BilevelPart(*report).z_iterations + BilevelPart(*report).y_iterations;
    out.rows = report->rows_processed;
  }
  return out;
}

using Param = std::tuple<std::string, std::string>;  // algorithm, problem

class InnerIterationAllocations : public ::testing::TestWithParam<Param> {};

TEST_P(InnerIterationAllocations, DoNotGrowWithTheNumberOfInnerIterations) {
  const auto& [algorithm, kind] = GetParam();
  const Problem p = MakeProblem(kind);
  const Counted few = WarmThenCountOneStep(RoundConfig(algorithm, p, false), p);
  const Counted many = WarmThenCountOneStep(RoundConfig(algorithm, p, true), p);
  ASSERT_LT(few.inner_iterations, many.inner_iterations)
      << "the two rounds must differ in inner iterations for the test to mean anything";
  EXPECT_EQ(few.allocations, many.allocations)
      << algorithm << " on " << kind << ": " << few.inner_iterations
      << " inner iterations allocated " << few.allocations << " times, " << many.inner_iterations
      << " allocated " << many.allocations << " times";
  std::printf("[ alloc    ] %s/%s: %d vs %d inner iterations -> %ld vs %ld allocations\n",
              algorithm.c_str(), kind.c_str(), few.inner_iterations, many.inner_iterations,
              few.allocations, many.allocations);
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, InnerIterationAllocations,
    // fsobo and sogd have no inner loop (one step of each kind per round).
    // svrb is single-loop too (one y-step per round).
    ::testing::Combine(::testing::Values("f2obo", "af2obo", "sf2obo", "obbo", "sobow", "aobo",
                                         "sobbo", "pzobo", "pzobo_s"),
                       ::testing::Values("quadratic", "ridge_hpo", "logistic_hpo_dense",
                                         "logistic_hpo_csr", "loss_tuning_dense")),
    [](const ::testing::TestParamInfo<Param>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

// Negative control: a logistic_hpo family that allocates on every G call.
class AllocatingFamily final : public BilevelFamily {
 public:
  explicit AllocatingFamily(std::unique_ptr<BilevelFamily> base) : base_(std::move(base)) {}
  std::string_view name() const override { return base_->name(); }
  int x_dim() const override { return base_->x_dim(); }
  int y_dim() const override { return base_->y_dim(); }
  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    return base_->ValidateBatch(b, role);
  }
  void Prepare(const StepData& data) override { base_->Prepare(data); }
  double F(const VecIn& x, const VecIn& y, const BatchView& v, Vector* gx, Vector* gy) override {
    return base_->F(x, y, v, gx, gy);
  }
  double G(const VecIn& x, const VecIn& y, const BatchView& v, Vector* gx, Vector* gy) override {
    Vector planted = y;  // the planted per-call allocation
    g_sink = planted.data();
    return base_->G(x, planted, v, gx, gy);
  }
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& v, const VecIn& u,
              Vector* out) override {
    base_->HvpYYG(x, y, v, u, out);
  }
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& v, const VecIn& u,
              Vector* out) override {
    base_->HvpXYG(x, y, v, u, out);
  }
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& v, const VecIn& u,
              Vector* out) override {
    base_->HvpYYF(x, y, v, u, out);
  }

 private:
  std::unique_ptr<BilevelFamily> base_;
};

TEST(AllocationCounter, DetectsAnAllocationPlantedInTheInnerIteration) {
  const Problem p = MakeProblem("logistic_hpo_dense");
  long counts[2];
  for (int many = 0; many < 2; ++many) {
    SessionConfig c = RoundConfig("f2obo", p, many == 1);
    // An explicit gamma: the automatic upper step's accumulator part is made
    // on the first round of a state that lacks it, which is not counted here.
    c.options.gamma = 0.001;
    // Fixed steps: the base BilevelFamily's power-iteration estimate (which this
    // wrapper falls back to) is not what is counted here.
    c.options.alpha = c.options.beta = 0.1;
    AllocatingFamily family(*CreateBilevelFamily(c.family));
    std::unique_ptr<BilevelAlgorithm> algorithm = *CreateBilevelAlgorithm(BilevelAlgorithmContext{
        c.algorithm, c.options, c.constraint, family.x_dim(), family.y_dim()});
    SessionState st =
        testing::BilevelState(Vector::Zero(family.x_dim()), Vector::Zero(family.y_dim()),
                              Vector::Zero(family.y_dim()), c.options.lambda1);
    BilevelVars s = BilevelView(&st);
    BilevelReport report;
    report.hypergradient.resize(family.x_dim());
    counts[many] = CountAllocations(
        [&] { EXPECT_TRUE(algorithm->Round(p.steps[0], family, &s, &report).ok()); });
  }
  // GradYGPair defaults to two G calls: 2 per iteration, +2 for h_t.
  EXPECT_EQ(counts[0], 2 * 5 + 2);
  EXPECT_EQ(counts[1], 2 * 50 + 2);
}

// The per-round allocations themselves are few (the report's vectors).
TEST(RoundAllocations, WarmF2oboRoundOnLogisticHpoAllocatesOnlyAHandful) {
  const Problem p = MakeProblem("logistic_hpo_dense");
  SessionConfig config = testing::ConfigFor("f2obo", p.family, p.constraint);
  config.options.inner_steps = 5;
  config.options.gamma = 0.001;
  const Counted c = WarmThenCountOneStep(config, p);
  std::printf("[ alloc    ] warm f2obo round on logistic_hpo (K = 5): %ld allocations\n",
              c.allocations);
  EXPECT_LE(c.allocations, 4);
  // The automatic upper step (gamma = 0, the default) writes its accumulator
  // part every round; the published view shares the previous one, so the
  // part is copied on write (its vector and its holder): two more.
  config.options.gamma = 0.0;
  const Counted automatic = WarmThenCountOneStep(config, p);
  EXPECT_LE(automatic.allocations, 4 + 2);
}

}  // namespace
}  // namespace f2obo
