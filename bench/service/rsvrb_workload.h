// The workload of the multi-task service benchmarks (state_cost_bench,
// transfer_bench): an rsvrb session on multitask_quadratic (d1 = d2 = 4,
// m tasks) whose steps carry task data from a pool of kPool distinct tasks
// reused across task ids, and the server's memory read from /proc.
#ifndef F2OBO_BENCH_SERVICE_RSVRB_WORKLOAD_H_
#define F2OBO_BENCH_SERVICE_RSVRB_WORKLOAD_H_

#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "f2obo/v1/convert.h"
#include "tests/core/multitask/multitask_streams.h"

namespace f2obo::bench {

constexpr int kDim = 4;
constexpr int kPool = 64;  // distinct task data, reused across task ids

// The session's spec: rsvrb on multitask_quadratic, m tasks, no exact
// metrics (they would run beside every step).
inline v1::SessionSpec RsvrbSpec(int m) {
  v1::SessionSpec spec;
  spec.set_problem_class("multitask_bilevel");
  spec.mutable_family()->set_name("multitask_quadratic");
  spec.mutable_family()->set_x_dim(kDim);
  spec.mutable_family()->set_y_dim(kDim);
  spec.mutable_family()->set_tasks(m);
  spec.set_algorithm("rsvrb");
  spec.set_seed(5);
  spec.mutable_metrics()->set_exact_every(0);
  return spec;
}

// Step t of session `id`, touching `tasks` (pool data task % kPool).
inline v1::StepRequest TaskStepRequest(const std::string& id, int64_t t,
                                       const std::vector<int>& tasks,
                                       const testing::QuadraticTasks& pool) {
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  for (int task : tasks) {
    TaskData d = pool.Task(task % kPool);
    d.task = task;
    ToProto(d, req.add_tasks());
  }
  return req;
}

// A /proc/<pid>/status field in KiB ("VmRSS:", "VmHWM:"); 0 if absent.
inline double StatusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == field) {
      in >> value;
      return value;
    }
    std::getline(in, key);
  }
  return 0;
}

}  // namespace f2obo::bench

#endif  // F2OBO_BENCH_SERVICE_RSVRB_WORKLOAD_H_
