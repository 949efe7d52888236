// logistic_hpo's dense small-shape rounds (and quadratic's, below) compute
// the same numbers, bit for bit, whatever kernels compute them: the trajectories below
// were recorded before the fused softmax/residual and the transposing stores and must not move.
// Every bilevel algorithm with fixed and automatic step sizes at the shapes the small-shape kernels
// take (bench/round_benchmark's small and medium, an odd shape whose rows and features leave tails
// of every block width, C = 2 and a CSR control), plus multitask_logistic_hpo with tempered tasks
// (mt_f2obo, rsvrb).  Each hash covers x, every vector and scalar of the state and the report's
// losses after every step.  The kernels' order is defined by the source only where the CPU has FMA
// (small_gemm.h), and the rest of a round (Eigen's reductions and products: norms, step sizes,
// projections) sums in the order of the build's vector width: each is recorded on an AVX-512 + FMA
// build and on an AVX2 + FMA one (x86-64-v3, the deploy baseline; tests/core/recorded_hashes.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/constraint.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "core/state.h"
#include "tests/core/bilevel/families/logistic_trajectory_other_avx512.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/core/recorded_hashes.h"

namespace f2obo::testing {
namespace {

struct Shape {
  int d, classes, rows;
  bool csr;
};

void Mix(uint64_t* h, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  for (int k = 0; k < 8; ++k) {
    *h ^= (bits >> (8 * k)) & 0xff;
    *h *= 0x100000001b3ULL;
  }
}

void Mix(uint64_t* h, const Vector& v) {
  for (Eigen::Index i = 0; i < v.size(); ++i) Mix(h, v[i]);
}

void MixState(uint64_t* h, const SessionState& s, const StepReport& r) {
  Mix(h, s.x);
  for (const Vector& v : s.vectors) Mix(h, v);
  for (double v : s.scalars) Mix(h, v);
  Mix(h, r.upper_loss_before);
  Mix(h, r.accuracy_before.value_or(-1.0));
}

// Rows ~ N(mu_label, I), class means of norm ~2 (bench/round_benchmark's
// GaussianBatch), some features zero in the CSR control.
Batch Rows(const Shape& s, const RowMatrix& means, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> label(0, s.classes - 1);
  std::normal_distribution<double> n01;
  Batch b;
  b.dense.resize(s.rows, s.d);
  b.labels.resize(s.rows);
  for (int i = 0; i < s.rows; ++i) {
    b.labels[i] = label(rng);
    for (int j = 0; j < s.d; ++j) {
      b.dense(i, j) = (s.csr && (i + j) % 3 == 0) ? 0.0 : means(b.labels[i], j) + n01(rng);
    }
  }
  if (s.csr) {
    b.sparse_features = true;
    b.csr = b.dense.sparseView();
    b.csr.makeCompressed();
    b.dense.resize(0, 0);
  }
  return b;
}

// The trajectories were recorded with the fixed upper step gamma = 0.001,
// the default before the automatic one (core/bilevel/hypergradients/upper_step.h):
// a gamma set must still give them bit for bit.
// Likewise the penalty schedule: lambda_1 t^tau, before F2OBO's and
// AF2OBO's default followed the inner loops (NextLambdaFollowing); the
// other algorithms do not read it.  And AF2OBO's automatic inner steps:
// the smoothness step throughout (inner_step_growth = 1), before its
// default took secant steps (core/bilevel/algorithms/af2obo.cc).
void PinRecordedGamma(AlgorithmOptions* o) {
  if (o->gamma == 0.0) o->gamma = 0.001;
  o->lambda_schedule = LambdaSchedule::kPaper;
  o->inner_step_growth = 1.0;
}

uint64_t Trajectory(const std::string& algorithm, const Shape& shape, bool auto_steps) {
  SessionConfig config;
  config.family.name = "logistic_hpo";
  config.family.features = shape.d;
  config.family.classes = shape.classes;
  config.family.mu0 = 1e-3;
  config.algorithm = algorithm;
  config.options = DefaultAlgorithmOptions(algorithm);
  PinRecordedGamma(&config.options);
  if (config.options.inner_steps > 1) config.options.inner_steps = 5;
  if (!auto_steps) {
    config.options.alpha = config.options.beta = 0.05;
    config.options.alpha_auto = config.options.beta_auto = false;
  }
  config.constraint = ConstraintSet::Box(0.0, 0.1);
  config.seed = 3;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(config);
  EXPECT_TRUE(s.ok()) << algorithm << ": " << s.status();
  if (!s.ok()) return 0;
  std::mt19937_64 rng(shape.d * 1000 + shape.rows);
  std::normal_distribution<double> n01;
  const RowMatrix means = RowMatrix::NullaryExpr(
      shape.classes, shape.d, [&] { return 2.0 * n01(rng) / std::sqrt(shape.d); });
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int t = 1; t <= 25; ++t) {
    const StepData data{Rows(shape, means, rng), Rows(shape, means, rng)};
    absl::StatusOr<StepReport> r = (*s)->Step(data);
    EXPECT_TRUE(r.ok()) << algorithm << " step " << t << ": " << r.status();
    if (!r.ok()) return 0;
    MixState(&h, (*s)->state(), *r);
  }
  return h;
}

// The shapes (d, C, rows): 20, 3, 8 (the benchmark's small round); 100,
// 10, 32 (its medium); 27, 5, 13 (tails: 8 + 5 rows, 16 + 8 + 3 features);
// 9, 2, 5 (C = 2, fewer rows than a block); 20, 3, 8 in CSR (the row
// kernels, a control).  svrb and rsvrb build explicit Hessians: not at the
// medium shape.
// rsvrb's trajectories were recorded with Alg. 2's y-step alpha and
// momentum 0.9, before its scaled y-step and momentum 0.99 became its
// defaults; the hashes pin that path (mt_f2obo reads neither
// option it changes; its momentum is unread).
void PinRecordedRsvrb(const std::string& algorithm, AlgorithmOptions* o) {
  if (algorithm != "rsvrb") return;
  o->rsvrb_decay = 0.0;
  o->rsvrb_scaled_alpha = false;
  o->momentum = 0.9;
}

uint64_t MultitaskTrajectory(const std::string& algorithm, int d, int classes, int rows) {
  const ConstraintSet set = ConstraintSet::Box(0.0, 0.1);
  SessionConfig config =
      MultitaskConfig(algorithm, LogisticTasksFamily(6, d, classes, /*max_temperature=*/4.0), set);
  config.seed = 5;
  PinRecordedRsvrb(algorithm, &config.options);
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(config);
  EXPECT_TRUE(s.ok()) << algorithm << ": " << s.status();
  if (!s.ok()) return 0;
  std::mt19937_64 rng(d * 31 + rows);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int t = 1; t <= 20; ++t) {
    const std::vector<int> tasks = {t % 6, (t * 5 + 1) % 6};
    absl::StatusOr<StepReport> r = (*s)->Step(LogisticTasksStep(tasks, d, classes, rows, rng));
    EXPECT_TRUE(r.ok()) << algorithm << " step " << t << ": " << r.status();
    if (!r.ok()) return 0;
    MixState(&h, (*s)->state(), *r);
  }
  return h;
}

struct Recorded {
  const char* algorithm;
  int d, classes, rows, csr, auto_steps;
  uint64_t expected;
};

// Recorded on main 5789e94 (before the fused softmax and the transposing
// stores), g++ 12 -march=native, AVX-512 + FMA.
constexpr Recorded kBilevel[] = {
    {"f2obo", 20, 3, 8, 0, 0, 0xc4febe45a1862d6fULL},
    {"f2obo", 20, 3, 8, 0, 1, 0xd072696f113ea755ULL},
    {"f2obo", 100, 10, 32, 0, 0, 0xc4c8047660cae541ULL},
    {"f2obo", 100, 10, 32, 0, 1, 0xdd30bf9570334fc5ULL},
    {"f2obo", 27, 5, 13, 0, 0, 0x90db7a0c8c5ffc70ULL},
    {"f2obo", 27, 5, 13, 0, 1, 0x576bd74657d2e9cULL},
    {"f2obo", 9, 2, 5, 0, 0, 0x2ecd75b9fe62ca65ULL},
    {"f2obo", 9, 2, 5, 0, 1, 0x13c2baa6594decc4ULL},
    {"f2obo", 20, 3, 8, 1, 0, 0xca7e48ab87e70e34ULL},
    {"f2obo", 20, 3, 8, 1, 1, 0x15f66dcd9d38077cULL},
    {"f2obo_sl", 20, 3, 8, 0, 0, 0x626de325f192fcf2ULL},
    {"f2obo_sl", 20, 3, 8, 0, 1, 0x665d448c76961e27ULL},
    {"f2obo_sl", 100, 10, 32, 0, 0, 0xd2c52c6382156224ULL},
    {"f2obo_sl", 100, 10, 32, 0, 1, 0xae3393a00376ed8cULL},
    {"f2obo_sl", 27, 5, 13, 0, 0, 0xb6259ca8b1b12e60ULL},
    {"f2obo_sl", 27, 5, 13, 0, 1, 0xc770d1a6c406804bULL},
    {"f2obo_sl", 9, 2, 5, 0, 0, 0x2a60fbc3c7efed20ULL},
    {"f2obo_sl", 9, 2, 5, 0, 1, 0x4ab0e001ecbf948bULL},
    {"f2obo_sl", 20, 3, 8, 1, 0, 0x10362caad670412ULL},
    {"f2obo_sl", 20, 3, 8, 1, 1, 0x48d77d75186fdc8cULL},
    {"af2obo", 20, 3, 8, 0, 0, 0x74a2c609f339e7dfULL},
    {"af2obo", 20, 3, 8, 0, 1, 0x45e96589daed3ee3ULL},
    {"af2obo", 100, 10, 32, 0, 0, 0x7795ee8e933ae1beULL},
    {"af2obo", 100, 10, 32, 0, 1, 0x6b7c027ea0575445ULL},
    {"af2obo", 27, 5, 13, 0, 0, 0xf22dc110e398c6d5ULL},
    {"af2obo", 27, 5, 13, 0, 1, 0x6145615846b454a0ULL},
    {"af2obo", 9, 2, 5, 0, 0, 0xe4fb1c00a6f55995ULL},
    {"af2obo", 9, 2, 5, 0, 1, 0x62c87aa0391ca568ULL},
    {"af2obo", 20, 3, 8, 1, 0, 0x8c81ab2b323b60f1ULL},
    {"af2obo", 20, 3, 8, 1, 1, 0x1b4c59bd11980211ULL},
    {"sf2obo", 20, 3, 8, 0, 0, 0x1714603e39f9860eULL},
    {"sf2obo", 20, 3, 8, 0, 1, 0x657d624705735e71ULL},
    {"sf2obo", 100, 10, 32, 0, 0, 0xca1bfd25ed34779dULL},
    {"sf2obo", 100, 10, 32, 0, 1, 0x1852a612697e5c27ULL},
    {"sf2obo", 27, 5, 13, 0, 0, 0x77b21711509fa270ULL},
    {"sf2obo", 27, 5, 13, 0, 1, 0x51ddbc10785c406cULL},
    {"sf2obo", 9, 2, 5, 0, 0, 0x9423b3c6fbb2273dULL},
    {"sf2obo", 9, 2, 5, 0, 1, 0xd1e14bdc0ea3ecfcULL},
    {"sf2obo", 20, 3, 8, 1, 0, 0x5109d5b2614549fdULL},
    {"sf2obo", 20, 3, 8, 1, 1, 0x5eff5828fbf4e399ULL},
    {"obbo", 20, 3, 8, 0, 0, 0xeef447ee3d7a643bULL},
    {"obbo", 20, 3, 8, 0, 1, 0x15f4981f0d576e33ULL},
    {"obbo", 100, 10, 32, 0, 0, 0xb35a4478835ed3ecULL},
    {"obbo", 100, 10, 32, 0, 1, 0x51e767b5fab3f1cdULL},
    {"obbo", 27, 5, 13, 0, 0, 0x6525f45df5c3b8e0ULL},
    {"obbo", 27, 5, 13, 0, 1, 0x19a14f30f108f952ULL},
    {"obbo", 9, 2, 5, 0, 0, 0x4dbc614c2ec13351ULL},
    {"obbo", 9, 2, 5, 0, 1, 0x1dc0c7c4fd1f6d3aULL},
    {"obbo", 20, 3, 8, 1, 0, 0xefeddd55735b1dbeULL},
    {"obbo", 20, 3, 8, 1, 1, 0x36774ea66b8c0c0cULL},
    {"sobow", 20, 3, 8, 0, 0, 0xd46f779236d1c848ULL},
    {"sobow", 20, 3, 8, 0, 1, 0x7e98c8fd4f5d4969ULL},
    {"sobow", 100, 10, 32, 0, 0, 0xfa0944b6b5353c5fULL},
    {"sobow", 100, 10, 32, 0, 1, 0x4b19bf204add4706ULL},
    {"sobow", 27, 5, 13, 0, 0, 0x9e87dfcdda356310ULL},
    {"sobow", 27, 5, 13, 0, 1, 0x602b04a27123d062ULL},
    {"sobow", 9, 2, 5, 0, 0, 0xf75b56cc0a710555ULL},
    {"sobow", 9, 2, 5, 0, 1, 0xb12d638c28d07f6fULL},
    {"sobow", 20, 3, 8, 1, 0, 0x8f2db828e68f51abULL},
    {"sobow", 20, 3, 8, 1, 1, 0xf9a46297b157bdbcULL},
    {"aobo", 20, 3, 8, 0, 0, 0xa4e9fdd65c088293ULL},
    {"aobo", 20, 3, 8, 0, 1, 0xcf49ca71e9cd9ea9ULL},
    {"aobo", 100, 10, 32, 0, 0, 0x76ef096ca7cb977bULL},
    {"aobo", 100, 10, 32, 0, 1, 0x5a5b14bb93580b7eULL},
    {"aobo", 27, 5, 13, 0, 0, 0x635154d03be33b5fULL},
    {"aobo", 27, 5, 13, 0, 1, 0x2049ea93eb023d23ULL},
    {"aobo", 9, 2, 5, 0, 0, 0x370f11a71a217e59ULL},
    {"aobo", 9, 2, 5, 0, 1, 0x5e4aa18f2d5cfbe9ULL},
    {"aobo", 20, 3, 8, 1, 0, 0x1308f200c012add4ULL},
    {"aobo", 20, 3, 8, 1, 1, 0xe6dccd2f342c1eb2ULL},
    {"fsobo", 20, 3, 8, 0, 0, 0xa97c5d422d800a05ULL},
    {"fsobo", 20, 3, 8, 0, 1, 0xe68e7e67c18830b5ULL},
    {"fsobo", 100, 10, 32, 0, 0, 0x1fda35873b2ec328ULL},
    {"fsobo", 100, 10, 32, 0, 1, 0xc03024176db08f7bULL},
    {"fsobo", 27, 5, 13, 0, 0, 0xf0b4999b448184ULL},
    {"fsobo", 27, 5, 13, 0, 1, 0x1457ed8594d7c8fbULL},
    {"fsobo", 9, 2, 5, 0, 0, 0xd1b4296b264913f6ULL},
    {"fsobo", 9, 2, 5, 0, 1, 0xc80b5757642ebbdcULL},
    {"fsobo", 20, 3, 8, 1, 0, 0x8882d492d3b78107ULL},
    {"fsobo", 20, 3, 8, 1, 1, 0xfcffeb48e5499e76ULL},
    {"sobbo", 20, 3, 8, 0, 0, 0x360336ac23f076bcULL},
    {"sobbo", 20, 3, 8, 0, 1, 0xc508e4bde6a43c8aULL},
    {"sobbo", 100, 10, 32, 0, 0, 0xe8a54a2152115b71ULL},
    {"sobbo", 100, 10, 32, 0, 1, 0x68c3ea45a8e81371ULL},
    {"sobbo", 27, 5, 13, 0, 0, 0x53dcd1e01dccec23ULL},
    {"sobbo", 27, 5, 13, 0, 1, 0xd41af9967524dbc7ULL},
    {"sobbo", 9, 2, 5, 0, 0, 0xfc8bccd68e9e9c48ULL},
    {"sobbo", 9, 2, 5, 0, 1, 0xdd9f9d739de23473ULL},
    {"sobbo", 20, 3, 8, 1, 0, 0xf735c2f6f08006acULL},
    {"sobbo", 20, 3, 8, 1, 1, 0xf1dc9e12f6518d86ULL},
    {"sogd", 20, 3, 8, 0, 0, 0x4ed4d604ba63d48eULL},
    {"sogd", 20, 3, 8, 0, 1, 0xe706e95ee5503db9ULL},
    {"sogd", 100, 10, 32, 0, 0, 0x4a5a3882e01c5f35ULL},
    {"sogd", 100, 10, 32, 0, 1, 0x63a8ddc33e7bfc36ULL},
    {"sogd", 27, 5, 13, 0, 0, 0x5cc1353964795517ULL},
    {"sogd", 27, 5, 13, 0, 1, 0x85ec5deae2ab5433ULL},
    {"sogd", 9, 2, 5, 0, 0, 0xc49b765f60665318ULL},
    {"sogd", 9, 2, 5, 0, 1, 0x9b2cf31126fc2f18ULL},
    {"sogd", 20, 3, 8, 1, 0, 0x886911382aef1792ULL},
    {"sogd", 20, 3, 8, 1, 1, 0x59126fb707dc024aULL},
    {"svrb", 20, 3, 8, 0, 0, 0xc8c82bdd488b1895ULL},
    {"svrb", 20, 3, 8, 0, 1, 0xaabd46d25a2d8e0dULL},
    {"svrb", 27, 5, 13, 0, 0, 0x9a542d36d35478ebULL},
    {"svrb", 27, 5, 13, 0, 1, 0xed7d7916ac099fd1ULL},
    {"svrb", 9, 2, 5, 0, 0, 0xb703b44d1c30eb98ULL},
    {"svrb", 9, 2, 5, 0, 1, 0x8d0ddd96cf2171aeULL},
    {"svrb", 20, 3, 8, 1, 0, 0xbe0b76b948c690daULL},
    {"svrb", 20, 3, 8, 1, 1, 0xff182eede5888bedULL},
    {"pzobo", 20, 3, 8, 0, 0, 0x78d67b5e711870bcULL},
    {"pzobo", 20, 3, 8, 0, 1, 0x87bea72de38467e2ULL},
    {"pzobo", 100, 10, 32, 0, 0, 0x5f9f30c6cd34fabfULL},
    {"pzobo", 100, 10, 32, 0, 1, 0x2c6d2de27be3b6afULL},
    {"pzobo", 27, 5, 13, 0, 0, 0xf2fd5e99afd60e3aULL},
    {"pzobo", 27, 5, 13, 0, 1, 0x8e86615248283d38ULL},
    {"pzobo", 9, 2, 5, 0, 0, 0x449944b874f6c560ULL},
    {"pzobo", 9, 2, 5, 0, 1, 0x75632223e33d671bULL},
    {"pzobo", 20, 3, 8, 1, 0, 0xe1f2330adb2a59e6ULL},
    {"pzobo", 20, 3, 8, 1, 1, 0xc6fe38ea46eefedULL},
    {"pzobo_s", 20, 3, 8, 0, 0, 0x78d67b5e711870bcULL},
    {"pzobo_s", 20, 3, 8, 0, 1, 0x87bea72de38467e2ULL},
    {"pzobo_s", 100, 10, 32, 0, 0, 0x5f9f30c6cd34fabfULL},
    {"pzobo_s", 100, 10, 32, 0, 1, 0x2c6d2de27be3b6afULL},
    {"pzobo_s", 27, 5, 13, 0, 0, 0xf2fd5e99afd60e3aULL},
    {"pzobo_s", 27, 5, 13, 0, 1, 0x8e86615248283d38ULL},
    {"pzobo_s", 9, 2, 5, 0, 0, 0x449944b874f6c560ULL},
    {"pzobo_s", 9, 2, 5, 0, 1, 0x75632223e33d671bULL},
    {"pzobo_s", 20, 3, 8, 1, 0, 0xe1f2330adb2a59e6ULL},
    {"pzobo_s", 20, 3, 8, 1, 1, 0xc6fe38ea46eefedULL},
};

// The same trajectories on an AVX2 + FMA build (x86-64-v3), row for row
// (tests/core/recorded_hashes.h).
constexpr uint64_t kBilevelAvx2[] = {
    0xc4febe45a1862d6fULL, 0x26a38a7ca7ecd490ULL, 0x60221a3304e6bf02ULL, 0xf8f39a99616fb8b3ULL,
    0x52875416753a8fc3ULL, 0x1e04cd39a2db9ee4ULL, 0x2ecd75b9fe62ca65ULL, 0x269973cfd15b5827ULL,
    0xca7e48ab87e70e34ULL, 0x2efc2c33c6563e49ULL, 0x626de325f192fcf2ULL, 0x6024584df00ab604ULL,
    0xbfef21381d9cf3b5ULL, 0xc2627ec4d7fcf8ecULL, 0x5f1f35309a5f7ceULL,  0xd34936687fad5b3dULL,
    0x2a60fbc3c7efed20ULL, 0x4ab0e001ecbf948bULL, 0x10362caad670412ULL,  0x1c0679cb9f9227c5ULL,
    0x74a2c609f339e7dfULL, 0x11356916d34c976ULL,  0xf3238df0409c4f8cULL, 0xaf686cd29b5453c5ULL,
    0x6e8b6c292f670e00ULL, 0x2bb48e5afe853956ULL, 0xe4fb1c00a6f55995ULL, 0xf7d07f93f74f4d1fULL,
    0x8c81ab2b323b60f1ULL, 0x5c5a2e1ab069e79fULL, 0x1714603e39f9860eULL, 0x1d8c3b085f6a9379ULL,
    0x4cb645c44ea00ebULL,  0xb1b2835d73e6d095ULL, 0x4c6a4b2dd33b4931ULL, 0x89331c87a0126bdaULL,
    0x9423b3c6fbb2273dULL, 0xd1e14bdc0ea3ecfcULL, 0x5109d5b2614549fdULL, 0xd5451b6a9500bd55ULL,
    0x38d10185e5b89a91ULL, 0xb915d46f23952ec4ULL, 0xc3e6a2af0a574c23ULL, 0xd0346eede1654ab6ULL,
    0x8c2ef5895a526e7dULL, 0x8dd3fbd2ccac0102ULL, 0xbf8bc100324afe03ULL, 0xaf1214f55e9c5aa1ULL,
    0x75a2367a8303fd3ULL,  0xb223216550b5e840ULL, 0x54edf555e3187267ULL, 0x625a57de54d2cf2bULL,
    0x9c08c0540f1b31dULL,  0xb2d436c961fc3b1ULL,  0x94ee20b174c66ab0ULL, 0x5b2b35cc5f3c4efdULL,
    0xedf3cfd4ae25455eULL, 0x4f043677550c2161ULL, 0xa2a91ea103e08d1ULL,  0xa2c2832e17a74e99ULL,
    0xf5763a0e9d786851ULL, 0xc792a433d1afdba3ULL, 0x572f326312e40a52ULL, 0xf58e32925b4d1ed1ULL,
    0x7a21bdea8bdea3dULL,  0xfcabebfdfff63439ULL, 0x2df5a8c1fd3c3eefULL, 0xbdde2affd8330918ULL,
    0x244c2369ca7d1d1bULL, 0xdbb8eb68ab982c2ULL,  0x2cad38dfcf9facfbULL, 0xc3d9664e97829458ULL,
    0x3b3c092496d40037ULL, 0xe54e888aad68ce6dULL, 0x52fa936d8f1a9b91ULL, 0xa9b2d5401c34b269ULL,
    0xbd0cf29c740731aaULL, 0xa5f66ed652020284ULL, 0x3977a0a55d77631bULL, 0xe7d956b63d31f6dbULL,
    0x8d19a19d5ffbd7deULL, 0x8c1c9ff670b435f6ULL, 0xb94c72ca364ee6e7ULL, 0xd3eaaec756f7298fULL,
    0xf248fccdf02d0776ULL, 0xd8f3349e828c2303ULL, 0x3ab98aab03df8459ULL, 0x96ef2bf074fae9caULL,
    0x6f3f7731ab4d28fULL,  0x99da1267c185017bULL, 0x89341fd12511ee75ULL, 0xa7e7f3f3d5a5068dULL,
    0xa4dd821abccaa9fdULL, 0x63c9a087e5439f8aULL, 0x402b9e41e9eeba44ULL, 0x8542d921757bf522ULL,
    0x1a6e99f0a9f85d08ULL, 0xfc29ffaec51a2344ULL, 0xcd40cdb142319491ULL, 0x6da83becb8382339ULL,
    0xce05e48465bcfa51ULL, 0x734b50d055c1dc14ULL, 0xc8cc4f1699ef4269ULL, 0x38aa0fdfe84323dULL,
    0xcf0a45e41c460495ULL, 0x27d537d4462a8bb2ULL, 0xec82bbd2f5cf9498ULL, 0xeaac70cdddb03db1ULL,
    0x96f7f7e41f00a57fULL, 0xaa6d5816c6dfb7bULL,  0xc43b2f99606616acULL, 0x7f88eba0a3386328ULL,
    0x209a4cb32e1c1330ULL, 0x7622f2393b9af923ULL, 0x4664a2ae88f1b20dULL, 0xa481aaa652060d4fULL,
    0xb578e99a052940c2ULL, 0xf4a3c13abd813981ULL, 0x96f7f7e41f00a57fULL, 0xaa6d5816c6dfb7bULL,
    0xc43b2f99606616acULL, 0x7f88eba0a3386328ULL, 0x209a4cb32e1c1330ULL, 0x7622f2393b9af923ULL,
    0x4664a2ae88f1b20dULL, 0xa481aaa652060d4fULL, 0xb578e99a052940c2ULL, 0xf4a3c13abd813981ULL,
};
static_assert(std::size(kBilevelAvx2) == std::size(kBilevel));

struct RecordedTasks {
  const char* algorithm;
  int d, classes, rows;
  uint64_t expected;
};

constexpr RecordedTasks kMultitask[] = {
    {"rsvrb", 20, 3, 8, 0x2f08eb9b200fb428ULL},
    {"rsvrb", 27, 5, 13, 0xc2f651860dbadd29ULL},
    {"rsvrb", 9, 2, 5, 0xf1c6249085aa7ea9ULL},
    {"mt_f2obo", 20, 3, 8, 0x9de1a1a8196ea9d6ULL},
    {"mt_f2obo", 100, 10, 32, 0xc4fac146d8087620ULL},
    {"mt_f2obo", 27, 5, 13, 0x143d36af6c6893afULL},
    {"mt_f2obo", 9, 2, 5, 0xff779a6f19ce6b1dULL},
};

// The same trajectories on an AVX2 + FMA build (x86-64-v3), row for row
// (tests/core/recorded_hashes.h).
constexpr uint64_t kMultitaskAvx2[] = {
    0xbc8200a67258dc6fULL, 0x70c3233523e0b254ULL, 0xd1d9d2db08e08a20ULL, 0xbc3a9b4001c2bb04ULL,
    0x6beb7814fb290272ULL, 0xc4ac9dde17025471ULL, 0x20d3867bfcc474d5ULL,
};
static_assert(std::size(kMultitaskAvx2) == std::size(kMultitask));

static_assert(std::size(kBilevelAvx512Other) == std::size(kBilevel));
static_assert(std::size(kMultitaskAvx512Other) == std::size(kMultitask));

TEST(LogisticTrajectory, BitEqualToTheRecordedOnes) {
  if (kThisBuildsColumn == HashColumn::kNone) GTEST_SKIP() << kNoRecordedColumn;
  for (size_t i = 0; i < std::size(kBilevel); ++i) {
    const Recorded& r = kBilevel[i];
    const uint64_t h =
        Trajectory(r.algorithm, Shape{r.d, r.classes, r.rows, r.csr != 0}, r.auto_steps != 0);
    EXPECT_TRUE(h == ForThisBuild(r.expected, kBilevelAvx2[i]) ||
                (kThisBuildsColumn == HashColumn::kAvx512Fma && h == kBilevelAvx512Other[i]))
        << r.algorithm << " d=" << r.d << " C=" << r.classes << " rows=" << r.rows
        << (r.csr ? " csr" : " dense") << (r.auto_steps ? " auto" : " fixed") << ": 0x" << std::hex
        << h;
  }
  for (size_t i = 0; i < std::size(kMultitask); ++i) {
    const RecordedTasks& r = kMultitask[i];
    const uint64_t h = MultitaskTrajectory(r.algorithm, r.d, r.classes, r.rows);
    EXPECT_TRUE(h == ForThisBuild(r.expected, kMultitaskAvx2[i]) ||
                (kThisBuildsColumn == HashColumn::kAvx512Fma && h == kMultitaskAvx512Other[i]))
        << r.algorithm << " d=" << r.d << " C=" << r.classes << " rows=" << r.rows << ": 0x"
        << std::hex << h;
  }
}

// The quadratic family's trajectories (M x + c cached per
// round): bilevel `quadratic` (d1 = 10, d2 = 20, a fresh M_t, c_t, d_t every
// step) and multitask_quadratic (6 static tasks, 2 a step), pinned the same way.
uint64_t QuadraticTrajectory(const std::string& algorithm, bool auto_steps) {
  SessionConfig config;
  config.family.name = "quadratic";
  config.family.x_dim = 10;
  config.family.y_dim = 20;
  config.algorithm = algorithm;
  config.options = DefaultAlgorithmOptions(algorithm);
  PinRecordedGamma(&config.options);
  if (config.options.inner_steps > 1) config.options.inner_steps = 5;
  if (!auto_steps) {
    config.options.alpha = config.options.beta = 0.05;
    config.options.alpha_auto = config.options.beta_auto = false;
  }
  config.constraint = ConstraintSet::Ball(3.0);
  config.seed = 3;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(config);
  EXPECT_TRUE(s.ok()) << algorithm << ": " << s.status();
  if (!s.ok()) return 0;
  std::mt19937_64 rng(77);
  std::normal_distribution<double> n01;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int t = 1; t <= 25; ++t) {
    StepData data;
    data.inner.M = Matrix::NullaryExpr(20, 10, [&] { return 0.3 * n01(rng); });
    data.inner.c = Vector::NullaryExpr(20, [&] { return n01(rng); });
    data.upper.d = Vector::NullaryExpr(20, [&] { return n01(rng); });
    absl::StatusOr<StepReport> r = (*s)->Step(data);
    EXPECT_TRUE(r.ok()) << algorithm << " step " << t << ": " << r.status();
    if (!r.ok()) return 0;
    MixState(&h, (*s)->state(), *r);
  }
  return h;
}

uint64_t MultitaskQuadraticTrajectory(const std::string& algorithm) {
  const QuadraticTasks tasks(6, 10, 20, 9);
  SessionConfig config =
      MultitaskConfig(algorithm, tasks.BilevelFamily(), ConstraintSet::Ball(3.0));
  config.seed = 5;
  PinRecordedRsvrb(algorithm, &config.options);
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(config);
  EXPECT_TRUE(s.ok()) << algorithm << ": " << s.status();
  if (!s.ok()) return 0;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int t = 1; t <= 20; ++t) {
    absl::StatusOr<StepReport> r = (*s)->Step(tasks.Step({t % 6, (t * 5 + 1) % 6}));
    EXPECT_TRUE(r.ok()) << algorithm << " step " << t << ": " << r.status();
    if (!r.ok()) return 0;
    MixState(&h, (*s)->state(), *r);
  }
  return h;
}

struct RecordedQuadratic {
  const char* algorithm;
  int auto_steps;  // -1: the multi-task run
  uint64_t expected;
};

// Recorded on w28ker a170186 (main's quadratic code), before the cache.
constexpr RecordedQuadratic kQuadratic[] = {
    {"f2obo", 0, 0x5b5a8733546892deULL},    {"f2obo", 1, 0x95e87557e842e9b4ULL},
    {"f2obo_sl", 0, 0xb8065f024ea83f5fULL}, {"f2obo_sl", 1, 0xbc62215ceb31ae70ULL},
    {"af2obo", 0, 0x629c5d6436f41721ULL},   {"af2obo", 1, 0x70f025f5436f8499ULL},
    {"sf2obo", 0, 0xa691ccd24c2bb3e3ULL},   {"sf2obo", 1, 0xde07166bc88b4477ULL},
    {"obbo", 0, 0x4613e8477856d197ULL},     {"obbo", 1, 0xef6df44148670d68ULL},
    {"sobow", 0, 0x49e6290a6d09461eULL},    {"sobow", 1, 0xdaf1840a8a7039edULL},
    {"aobo", 0, 0x20d8f1307da91c57ULL},     {"aobo", 1, 0xcac34b71f5c56765ULL},
    {"fsobo", 0, 0xf2a02a0fd55832bdULL},    {"fsobo", 1, 0x54adf7344a0f5edaULL},
    {"sobbo", 0, 0x12640f8ffc1f5564ULL},    {"sobbo", 1, 0x8688cef56169fed2ULL},
    {"sogd", 0, 0x7333d6e935970c80ULL},     {"sogd", 1, 0x4a3dc28284fd6a4cULL},
    {"svrb", 0, 0xdc7c29894dd557eeULL},     {"svrb", 1, 0x87092367b6b2728aULL},
    {"pzobo", 0, 0x6f4e6330c952e7cULL},     {"pzobo", 1, 0xec7ee065eb2494b3ULL},
    {"pzobo_s", 0, 0x6f4e6330c952e7cULL},   {"pzobo_s", 1, 0xec7ee065eb2494b3ULL},
    {"rsvrb", -1, 0x1c706942bf52e919ULL},   {"mt_f2obo", -1, 0xb7e07794348112a2ULL},
};

// The same trajectories on an AVX2 + FMA build (x86-64-v3), row for row
// (tests/core/recorded_hashes.h).
constexpr uint64_t kQuadraticAvx2[] = {
    0x4242eb1fc41e2cd7ULL, 0x801bf470b03c526eULL, 0xd7761a87f26011e3ULL, 0xf4efa04e48027f1dULL,
    0xa2172889ae68d238ULL, 0xb1599793cf76340aULL, 0x31eeb2aaa5d3409dULL, 0x21a5b8d768353380ULL,
    0x9e2800b111c026d0ULL, 0xbf2fef75ebd7b489ULL, 0x5d7a19cf42a2c0b5ULL, 0x64555d78d7d6dd63ULL,
    0xa24d9bb0047ceefeULL, 0xa12b85f078400a28ULL, 0xe07e0597033f68e3ULL, 0xedc4093ae28bacb9ULL,
    0x505d0dfef5a83ec6ULL, 0x24c9d4cd9bc5de6eULL, 0x7e1507f38173adcfULL, 0xed7f2384d5f4ac23ULL,
    0xe9e9a346fc3a7b5dULL, 0xea8b3daa2a4e4b74ULL, 0xbaac130628461e59ULL, 0x23a2087a770404edULL,
    0xbaac130628461e59ULL, 0x23a2087a770404edULL, 0x97b4534d26667712ULL, 0x16baa0c7bef407adULL,
};
static_assert(std::size(kQuadraticAvx2) == std::size(kQuadratic));

TEST(QuadraticTrajectory, BitEqualToTheRecordedOnes) {
  if (kThisBuildsColumn == HashColumn::kNone) GTEST_SKIP() << kNoRecordedColumn;
  for (size_t i = 0; i < std::size(kQuadratic); ++i) {
    const RecordedQuadratic& r = kQuadratic[i];
    const uint64_t h = r.auto_steps < 0 ? MultitaskQuadraticTrajectory(r.algorithm)
                                        : QuadraticTrajectory(r.algorithm, r.auto_steps != 0);
    EXPECT_EQ(h, ForThisBuild(r.expected, kQuadraticAvx2[i]))
        << r.algorithm << " " << r.auto_steps << ": 0x" << std::hex << h;
  }
}

}  // namespace
}  // namespace f2obo::testing
