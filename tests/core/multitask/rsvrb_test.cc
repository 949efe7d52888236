// RSVRB (core/multitask/rsvrb.cc): with one task it is SVRB bit for bit;
// its lazy "delay update until sampled" decay equals running Alg. 2's
// updates for every task at every step (an eager reference written here
// from the paper), at constant steps and under the decaying schedule
// (core/multitask/rsvrb_schedule.h); it drives ||grad F|| down on a static
// quadratic multi-task stream; the explicit-size guard.
#include "core/multitask/rsvrb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/bilevel/bilevel_state.h"
#include "core/hypergradients/spectral_projections.h"
#include "core/multitask/multitask_problem.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

bool Bits(const Vector& a, const Vector& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 8 * a.size()) == 0;
}

// Steps a bilevel svrb session and a one-task rsvrb session on the same
// batches and compares every shared variable bit for bit after each step.
void ExpectRsvrbIsSvrb(const FamilyConfig& single, const FamilyConfig& multi,
                       const ConstraintSet& set, const std::vector<StepData>& stream) {
  SessionConfig sc = testing::ConfigFor("svrb", single, set);
  SessionConfig mc = testing::MultitaskConfig("rsvrb", multi, set);
  sc.seed = mc.seed = 77;
  sc.options.sample_rows = mc.options.sample_rows = 16;
  mc.options.rsvrb_decay = 0.0;  // svrb's constant steps (p = 1: the scaled y-step is alpha)
  mc.options.momentum = sc.options.momentum;  // svrb's default 0.9 (rsvrb's: 0.99)
  sc.options.gamma = mc.options.gamma;        // rsvrb's fixed step (svrb's default: automatic)
  std::unique_ptr<Session> svrb = *Session::Create(sc);
  std::unique_ptr<Session> rsvrb = *Session::Create(mc);
  const TaskTable& table = *MultitaskTable(rsvrb->problem());
  for (size_t t = 0; t < stream.size(); ++t) {
    StepData tasks;
    tasks.tasks.push_back(TaskData{0, stream[t], 0.0});
    ASSERT_TRUE(svrb->Step(stream[t]).ok()) << t;
    ASSERT_TRUE(rsvrb->Step(tasks).ok()) << t;
    const SessionState& a = svrb->state();
    const SessionState& b = rsvrb->state();
    ASSERT_EQ(table.touched(b), 1);
    EXPECT_TRUE(Bits(a.x, b.x)) << "x at step " << t + 1;
    EXPECT_TRUE(Bits(a.vectors[kBilevelY], table.Var(b, 0, kRsvrbY))) << "y, step " << t + 1;
    // svrb's aux: u, w, v, J, H, x_{t-1}, y_{t-1}.
    const int vars[] = {kRsvrbU, kRsvrbW, kRsvrbV, kRsvrbJ, kRsvrbH};
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(Bits(a.aux[i], table.Var(b, 0, vars[i])))
          << "estimator " << i << ", step " << t + 1;
    }
    EXPECT_TRUE(Bits(a.aux[5], table.Global(b, kRsvrbXPrev))) << t;
    EXPECT_TRUE(Bits(a.aux[6], table.Var(b, 0, kRsvrbYPrev))) << t;
    EXPECT_TRUE(a.rng == b.rng) << "RNG at step " << t + 1;
    EXPECT_EQ(a.rows_processed, b.rows_processed);
  }
}

TEST(Rsvrb, WithOneTaskIsSvrbBitForBitOnMiniBatchDraws) {
  constexpr int kFeatures = 3, kClasses = 2;
  FamilyConfig single;
  single.name = "logistic_hpo";
  single.features = kFeatures;
  single.classes = kClasses;
  std::mt19937_64 rng(11);
  std::vector<StepData> stream;
  for (int t = 0; t < 25; ++t) {
    stream.push_back(StepData{testing::ClassificationBatch(40, kFeatures, kClasses, false, rng),
                              testing::ClassificationBatch(40, kFeatures, kClasses, false, rng)});
  }
  ExpectRsvrbIsSvrb(single, testing::LogisticTasksFamily(1, kFeatures, kClasses),
                    ConstraintSet::Box(0.0, 0.1), stream);
}

TEST(Rsvrb, WithOneTaskIsSvrbBitForBitOnAQuadraticStream) {
  const testing::QuadraticTasks q(1, 3, 4, 5);
  FamilyConfig single = q.BilevelFamily();
  single.name = "quadratic";
  single.tasks = 0;
  std::vector<StepData> stream;
  for (int t = 0; t < 25; ++t) stream.push_back(q.Task(0).data);
  ExpectRsvrbIsSvrb(single, q.BilevelFamily(), ConstraintSet::Ball(2.0), stream);
}

// Alg. 2 as written, every task updated at every step ("delay update until
// sampled" done eagerly), for multitask_quadratic tasks whose derivatives
// are closed forms: grad_x f = 0, grad_y f = y - d, grad_y g = mu (y - M x -
// c), grad2_xy g = -mu M^T, grad2_yy g = mu I.  The service's choices it
// mirrors (rsvrb.cc): j_t drawn first from the session RNG, a task's
// estimators start at its derivatives on its first round, untouched tasks
// have z = 0.  With rsvrb_decay = q > 0 every step t takes its own
// s_t = ((c0 + 1) / (c0 + t))^q, computed here from the formula:
// gamma s_t, keeps 1 - (1 - momentum) s_t^2 and 1 - (1 - task_momentum)
// s_t^2, for sampled and unsampled tasks alike; task i's y-step is
// a_i s_t with a_i = alpha p (rsvrb_scaled_alpha; alpha without it), p the
// sampling probability of its last sampled step.
class EagerRsvrb {
 public:
  EagerRsvrb(const testing::QuadraticTasks& q, const AlgorithmOptions& o, uint64_t seed)
      : q_(q), o_(o), rng_(seed), x_(Vector::Zero(q.d1)), x_prev_(x_), d_(x_), tasks_(q.m()) {
    for (Task& k : tasks_) {
      k.y = k.y_prev = k.w = k.v = Vector::Zero(q.d2);
      k.u = k.z = Vector::Zero(q.d1);
      k.j = Matrix::Zero(q.d1, q.d2);
      k.h = Matrix::Zero(q.d2, q.d2);
    }
  }

  void Step(const std::vector<int>& sampled) {
    ++t_;
    const int m = q_.m();
    const bool decaying = o_.rsvrb_decay > 0.0;
    const double s =
        decaying ? std::pow((o_.rsvrb_offset + 1.0) / (o_.rsvrb_offset + t_), o_.rsvrb_decay) : 1.0;
    const double keep = decaying ? 1.0 - (1.0 - o_.momentum) * s * s : o_.momentum;
    const double task_keep = decaying ? 1.0 - (1.0 - o_.task_momentum) * s * s : o_.task_momentum;
    const double gamma = o_.gamma * s;
    const double p = static_cast<double>(sampled.size()) / m;
    const int j = static_cast<int>(rng_.UniformBelow(m));
    const Vector z_jt = tasks_[j].z;
    const std::set<int> in(sampled.begin(), sampled.end());
    for (int i = 0; i < m; ++i) {
      Task& k = tasks_[i];
      if (in.count(i) > 0) {
        Derivatives cur = At(i, x_, k.y), prev = At(i, x_prev_, k.y_prev);
        if (!k.touched) {
          k.u = cur.gx_f;
          k.w = cur.gy_f;
          k.v = cur.gy_g;
          k.j = cur.jxy;
          k.h = cur.hyy;
          k.touched = true;
        } else {
          k.u = keep * (k.u - prev.gx_f / p) + cur.gx_f / p;
          k.w = keep * (k.w - prev.gy_f / p) + cur.gy_f / p;
          k.v = keep * (k.v - prev.gy_g / p) + cur.gy_g / p;
          k.j = keep * (k.j - prev.jxy / p) + cur.jxy / p;
          k.h = keep * (k.h - prev.hyy / p) + cur.hyy / p;
        }
        k.alpha = o_.rsvrb_scaled_alpha ? o_.alpha * p : o_.alpha;
        k.j = ClipSingularValues(k.j, o_.jacobian_clip);
        k.h = RaiseEigenvalues(k.h, o_.hessian_floor);
      } else if (k.touched) {
        k.u *= keep;
        k.w *= keep;
        k.v *= keep;
        k.j *= keep;
        k.h = RaiseEigenvalues(keep * k.h, o_.hessian_floor);
      } else {
        continue;  // never touched: no state yet
      }
      k.z = k.u - k.j * k.h.ldlt().solve(k.w);
      k.y_prev = k.y;
      k.y -= (k.alpha * s) * k.v;
    }
    d_ = task_keep * (d_ - z_jt) + tasks_[j].z;
    x_prev_ = x_;
    x_ -= gamma * d_;
  }

  const Vector& x() const { return x_; }
  const Vector& y(int i) const { return tasks_[i].y; }
  const Vector& z(int i) const { return tasks_[i].z; }

 private:
  struct Task {
    bool touched = false;
    double alpha = 0.0;  // y-step before the schedule's factor
    Vector y, y_prev, u, w, v, z;
    Matrix j, h;
  };
  struct Derivatives {
    Vector gx_f, gy_f, gy_g;
    Matrix jxy, hyy;
  };
  Derivatives At(int i, const Vector& x, const Vector& y) const {
    const double mu = 1.0;
    Derivatives r;
    r.gx_f = Vector::Zero(q_.d1);
    r.gy_f = y - q_.d[i];
    r.gy_g = mu * (y - q_.M[i] * x - q_.c[i]);
    r.jxy = -mu * q_.M[i].transpose();
    r.hyy = mu * Matrix::Identity(q_.d2, q_.d2);
    return r;
  }

  const testing::QuadraticTasks& q_;
  AlgorithmOptions o_;
  Rng rng_;
  int64_t t_ = 0;
  Vector x_, x_prev_, d_;
  std::vector<Task> tasks_;
};

// Steps a lazy session and the eager reference on `schedule` (tasks 0-2 of
// four; task 3 never sampled, j_t still draws it) and compares x after
// every step (to `tol` relative to max ||x||), then y_i and z_i of tasks
// 0-2 after one more step of each.  Returns the largest relative x error.
double ExpectLazyEqualsEager(AlgorithmOptions options,
                             const std::vector<std::vector<int>>& schedule, double tol) {
  const testing::QuadraticTasks q(4, 2, 3, 21);
  SessionConfig config =
      testing::MultitaskConfig("rsvrb", q.BilevelFamily(), ConstraintSet::None());
  config.seed = 9;
  config.options = options;
  std::unique_ptr<Session> lazy = *Session::Create(config);
  EagerRsvrb eager(q, config.options, config.seed);
  const TaskTable& table = *MultitaskTable(lazy->problem());
  double scale = 0.0, worst = 0.0;
  for (size_t t = 0; t < schedule.size(); ++t) {
    EXPECT_TRUE(lazy->Step(q.Step(schedule[t])).ok()) << t;
    eager.Step(schedule[t]);
    scale = std::max(scale, eager.x().norm());
    const double err = (lazy->state().x - eager.x()).norm() / (1.0 + scale);
    worst = std::max(worst, err);
    if (err >= tol) {
      ADD_FAILURE() << "x after step " << t + 1 << ": relative error " << err;
      return worst;
    }
  }
  // The stored per-task state is that of each task's last update; bring it
  // forward by stepping each task once more and compare y_i.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(lazy->Step(q.Step({i})).ok());
    eager.Step({i});
    const int slot = table.Find(lazy->state(), i);
    EXPECT_LT((table.Var(lazy->state(), slot, kRsvrbY) - eager.y(i)).norm(), tol) << "task " << i;
    EXPECT_LT((table.Var(lazy->state(), slot, kRsvrbZ) - eager.z(i)).norm(), 10 * tol)
        << "task " << i;
  }
  EXPECT_EQ(table.touched(lazy->state()), 3);  // task 3 never holds state
  return worst;
}

// Tasks 0-2 sampled one or two at a time, long gaps included.
std::vector<std::vector<int>> GappySchedule(int steps) {
  std::mt19937_64 rng(3);
  std::vector<std::vector<int>> schedule;
  for (int t = 0; t < steps; ++t) {
    if (t % 7 == 6) {
      schedule.push_back({0, 2});
    } else if (t < 20) {
      schedule.push_back({static_cast<int>(rng() % 2)});
    } else {
      schedule.push_back({static_cast<int>(rng() % 3)});
    }
  }
  return schedule;
}

AlgorithmOptions LazyEagerOptions() {
  AlgorithmOptions o = DefaultAlgorithmOptions("rsvrb");
  o.gamma = 0.05;
  o.hessian_floor = 0.5;  // active: decayed H's eigenvalues reach the floor
  o.alpha = 0.1;          // the eager reference's fixed step (default: automatic)
  return o;
}

TEST(Rsvrb, LazyDecayEqualsApplyingEveryUnsampledUpdateEagerly) {
  AlgorithmOptions o = LazyEagerOptions();
  o.rsvrb_decay = 0.0;  // constant steps (Theorem 2), Alg. 2's y-step alpha
  o.rsvrb_scaled_alpha = false;
  o.momentum = 0.9;  // as recorded before rsvrb's default became 0.99
  ExpectLazyEqualsEager(o, GappySchedule(60), 1e-10);
}

// The decaying schedule with the default y-step alpha p (p = 1/4 or 2/4
// by step), with a small c0 so that s_t moves a lot over the run: the
// lazy catch-up's loop over the skipped steps' own keeps and y-steps equals
// the eager updates, also across a 150-step gap (task 2 unsampled from step
// 61 to 210).
TEST(Rsvrb, LazyDecayEqualsTheEagerUpdatesUnderTheDecayingSchedule) {
  AlgorithmOptions o = LazyEagerOptions();
  o.rsvrb_decay = 1.0 / 3.0;
  o.rsvrb_offset = 2.0;
  o.momentum = 0.6;  // b_1 = 0.4: the keeps differ from step to step visibly
  o.task_momentum = 0.7;
  std::vector<std::vector<int>> schedule = GappySchedule(60);
  std::mt19937_64 rng(5);
  for (int t = 0; t < 150; ++t) schedule.push_back({static_cast<int>(rng() % 2)});
  const double worst = ExpectLazyEqualsEager(o, schedule, 1e-13);
  EXPECT_LT(worst, 1e-13);
  // Not the constant schedule: the same run at q = 0 ends elsewhere.
  const testing::QuadraticTasks q(4, 2, 3, 21);
  SessionConfig a = testing::MultitaskConfig("rsvrb", q.BilevelFamily(), ConstraintSet::None());
  a.options = o;
  SessionConfig b = a;
  b.options.rsvrb_decay = 0.0;
  std::unique_ptr<Session> decaying = *Session::Create(a), constant = *Session::Create(b);
  for (const std::vector<int>& tasks : schedule) {
    ASSERT_TRUE(decaying->Step(q.Step(tasks)).ok());
    ASSERT_TRUE(constant->Step(q.Step(tasks)).ok());
  }
  EXPECT_GT((decaying->state().x - constant->state().x).norm(), 1e-3);
}

// rsvrb's defaults (constant steps, y-step alpha p, momentum 0.99): lazy
// equals eager too.
TEST(Rsvrb, LazyDecayEqualsTheEagerUpdatesWithTheScaledYStep) {
  AlgorithmOptions o = LazyEagerOptions();
  ASSERT_EQ(o.rsvrb_decay, 0.0);      // the defaults: constant steps,
  ASSERT_TRUE(o.rsvrb_scaled_alpha);  // the scaled y-step,
  ASSERT_EQ(o.momentum, 0.99);        // rsvrb's momentum
  EXPECT_LT(ExpectLazyEqualsEager(o, GappySchedule(60), 1e-10), 1e-10);
}

// Mean of ||grad F(x_t)|| / ||grad F(x_1)|| over the last tenth of `steps`
// one-task steps (tasks uniform, the client's draws) of a static quadratic
// stream with m = 5.
double TailGradient(double momentum, double task_momentum, int steps) {
  const testing::QuadraticTasks q(5, 3, 4, 31);
  SessionConfig config =
      testing::MultitaskConfig("rsvrb", q.BilevelFamily(), ConstraintSet::None());
  config.seed = 4;
  config.options.gamma = 0.002;
  config.options.alpha = 0.05;
  config.options.momentum = momentum;
  config.options.task_momentum = task_momentum;
  config.options.rsvrb_decay = 0.0;  // Theorem 2's constant steps, Alg. 2's y-step
  config.options.rsvrb_scaled_alpha = false;
  std::unique_ptr<Session> s = *Session::Create(config);
  const double start = q.GradF(s->state().x).norm();
  std::mt19937_64 rng(8);
  double tail = 0.0;
  for (int t = 0; t < steps; ++t) {
    EXPECT_TRUE(s->Step(q.Step({static_cast<int>(rng() % q.m())})).ok()) << t;
    if (t >= steps - steps / 10) tail += q.GradF(s->state().x).norm() / start;
  }
  return tail / (steps / 10);
}

// With constant b, b_d (Theorem 2's setting) RSVRB reaches a noise floor
// that shrinks with b: the task sampling enters d_t through kicks of size
// m z at rate 1/m.  Measured: 4.0e-2 at b = 1e-3 (20,000 steps), 1.2e-2 at
// b = 1e-4 (100,000 steps); with one task it converges (9e-6).
TEST(Rsvrb, DrivesTheGradientOfFToANoiseFloorThatShrinksWithBeta) {
  const double coarse = TailGradient(0.999, 0.99, 20000);
  const double fine = TailGradient(0.9999, 0.999, 100000);
  EXPECT_LT(coarse, 5e-2);
  EXPECT_LT(fine, 2e-2);
  EXPECT_LT(fine, 0.5 * coarse);
}

TEST(Rsvrb, RefusesProblemsAboveMaxExplicitDim) {
  const testing::QuadraticTasks q(2, 3, 40, 1);
  SessionConfig config =
      testing::MultitaskConfig("rsvrb", q.BilevelFamily(), ConstraintSet::None());
  config.options.max_explicit_dim = 32;
  const absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("options.max_explicit_dim"));
}

}  // namespace
}  // namespace f2obo
