// What a session's spec says about its family, whatever the problem class:
// each family reads its own fields.
#ifndef F2OBO_CORE_FAMILY_CONFIG_H_
#define F2OBO_CORE_FAMILY_CONFIG_H_

#include <string>

namespace f2obo {

// Everything needed to build a family; each family reads its own fields.
struct FamilyConfig {
  std::string name;         // registry key, e.g. "logistic_hpo"
  int features = 0;         // d: columns of every batch (sample families)
  int classes = 0;          // C (classification families)
  int x_dim = 0;            // d1 (quadratic only; others derive it)
  int y_dim = 0;            // d2 (quadratic only; others derive it)
  double mu = 1.0;          // quadratic: strong convexity of g
  double mu0 = 1e-3;        // ridge term added to keep g strongly convex in y
  bool bump_upper = false;  // quadratic: f = c exp(-||y||^2) instead of LS
  double bump_scale = 1.0;  // quadratic: the c of the bump
  // Multi-task families (core/multitask/): m, the number of lower-level
  // problems (0 for the single-task families, which ignore it).
  int tasks = 0;
  // multitask_logistic_hpo: task i's loss temperature sigma_i is drawn once,
  // deterministically from i, in [1, max_temperature] (1: no temperature).
  double max_temperature = 1.0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_FAMILY_CONFIG_H_
