// Replays a dataset as a drifting stream of (upper, inner) batches, with the
// drift schedules of the paper's experiments:
//  * class-imbalance phases (Sec. 6.1): in phase p, a row of class i is kept
//    with probability rho_p^i (e.g. rho 0.6 -> 0.7 -> 0.8 -> 0.9, 100 steps each);
//  * label noise (Sec. 6.2): from a given step on, each training (inner) label
//    is replaced with probability p by a uniformly random class.
// Step t's batches depend only on (seed, t), so a client that resumes or
// retries step t regenerates exactly the same data.
//
// The sampler is rejection sampling, so it is bounded: a step that cannot
// keep its rows within kMaxDrawsPerRow draws per row (e.g. rho^i on a
// regression target read as hundreds of classes) fails with
// FAILED_PRECONDITION saying why, instead of spinning.
#ifndef F2OBO_CLIENT_DATA_DRIFT_STREAM_H_
#define F2OBO_CLIENT_DATA_DRIFT_STREAM_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/data/dataset.h"
#include "core/batch.h"
#include "core/rng.h"

namespace f2obo::data {

struct DriftOptions {
  int rows_per_step = 256;             // rows drawn per step, split into the batches
  double upper_fraction = 0.5;         // share of the rows that form the upper batch
  std::vector<double> imbalance_rhos;  // one rho per phase; empty = balanced
  int64_t phase_steps = 100;           // steps per imbalance phase
  // (first step, probability) pairs, sorted by step: the latest applies.
  std::vector<std::pair<int64_t, double>> label_noise;
  bool noise_in_upper = false;  // also corrupt validation labels
  uint64_t seed = 1;
};

// Draws per requested row before a step gives up (the mean keep
// probability would have to be below 1/1000: the paper's schedules on 10
// classes keep >= 1 row in 4).
inline constexpr int64_t kMaxDrawsPerRow = 1000;

class DriftingStream {
 public:
  // `dataset` must outlive the stream.
  DriftingStream(const Dataset& dataset, DriftOptions options);

  // Batches of step t (t >= 1); FAILED_PRECONDITION when the imbalance
  // schedule keeps too few rows (see kMaxDrawsPerRow).
  absl::StatusOr<StepData> Make(int64_t t) const;

  // Multi-task streams: the dataset split into `tasks` tasks, task i
  // holding the rows r with r % tasks == i (1 <= tasks <= rows).  Task i's
  // batches at step t, drawn from its rows with the drift above; they
  // depend only on (seed, t, i).
  absl::StatusOr<StepData> MakeForTask(int64_t t, int task, int tasks) const;
  // Step t of a multi-task stream: `per_step` distinct tasks drawn
  // uniformly (the client's sampling, p_i = per_step / tasks), each with
  // MakeForTask's batches, in StepData::tasks (top-level batches empty).
  absl::StatusOr<StepData> MakeTasks(int64_t t, int tasks, int per_step) const;

  // Keep-probability of class `label` at step t (1 without imbalance).
  double KeepProbability(int64_t t, int label) const;
  // Label-noise probability in force at step t.
  double NoiseProbability(int64_t t) const;

 private:
  Batch TakeRows(const std::vector<int>& rows, const std::vector<int32_t>& labels) const;
  // Step t's batches from the rows first + k stride, k in [0, pool).
  absl::StatusOr<StepData> Draw(Rng& rng, int64_t t, int first, int stride, int pool) const;
  // The error of a step whose draws ran out: the mean keep probability.
  absl::Status TooFewKept(int64_t t, int kept, int64_t draws, int first, int stride,
                          int pool) const;

  const Dataset& data_;
  DriftOptions o_;
};

// Parses "0.6,0.7,0.8,0.9" and "2500:0.05,5000:0.10" style flag values.
absl::StatusOr<std::vector<double>> ParseRhos(const std::string& text);
absl::StatusOr<std::vector<std::pair<int64_t, double>>> ParseNoise(const std::string& text);

}  // namespace f2obo::data

#endif  // F2OBO_CLIENT_DATA_DRIFT_STREAM_H_
