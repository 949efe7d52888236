// What an algorithm's registry entry says about it, whatever its problem
// class: the only place that knows its class, its options (which ones it
// reads, its defaults, its own cross-field checks) and the paper's
// experimental setting.  Each algorithm defines its entry in its own file;
// a class's registry lists the entries (core/bilevel/bilevel_algorithm_registry.cc for the
// bilevel class).
#ifndef F2OBO_CORE_ALGORITHM_INFO_H_
#define F2OBO_CORE_ALGORITHM_INFO_H_

#include "absl/status/status.h"
#include "core/options.h"
#include "core/problem_class.h"

namespace f2obo {

struct AlgorithmInfo {
  const char* name;
  ProblemClass problem_class;
  const char* summary;  // one line: the update and its source
  OptionSet reads;      // the options its rounds read (validated, reported)
  // Its defaults over the generic ones of core/options.def (may be null).
  void (*defaults)(AlgorithmOptions*) = nullptr;
  // Checks across options, beyond each read option's own rule (may be
  // null); errors are INVALID_ARGUMENT "options.<field>: ...".
  absl::Status (*check)(const AlgorithmOptions&) = nullptr;
  // The setting of the paper's experiments, applied over the defaults (may
  // be null); tests run every algorithm at both.
  void (*experiment)(AlgorithmOptions*) = nullptr;
  // Whether its rounds ask the family for values and first derivatives
  // only (no HVP): what an oracle family (core/bilevel/families/oracle_family.h),
  // whose client answers nothing more, can serve.
  bool first_order = false;
  // Whether its state keeps rows of past steps (the simple class's windows,
  // core/simple/algorithms/stream_windows.h): what an oracle family, whose
  // rows stay with the client, cannot serve.
  bool keeps_rows = false;
  // Whether its automatic inner steps (alpha, beta = 0) can come from
  // secants of the inner iterates' gradients when the family has no HVPs
  // (core/bilevel/hypergradients/secant_steps.h): what an oracle family serves.
  bool secant_steps = false;
};

// The generic defaults with the entry's own applied.
AlgorithmOptions DefaultOptions(const AlgorithmInfo& info);
// Each read option against its rule, then the entry's check.
absl::Status ValidateAlgorithmOptions(const AlgorithmInfo& info, const AlgorithmOptions& o);

}  // namespace f2obo

#endif  // F2OBO_CORE_ALGORITHM_INFO_H_
