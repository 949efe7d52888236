// `algorithms`: the problem classes, their families and algorithms, and each
// algorithm's options (what it reads, its defaults, the rules), all from
// the core registries and core/options.def, so it cannot drift from what
// the server accepts.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/cli.h"
#include "core/problem_registry.h"

namespace f2obo::cli {

int RunAlgorithms() {
  const std::string only = absl::GetFlag(FLAGS_algorithm);
  if (!only.empty() && FindAlgorithm(only) == nullptr) {
    return UsageError(absl::StrCat("--algorithm: unknown algorithm '", only, "'"));
  }
  for (const ProblemClassEntry& c : ProblemClasses()) {
    if (only.empty()) {
      std::printf("problem class %s: %s\n  families: %s\n  default algorithm: %s\n    why: %s\n",
                  c.name, c.summary, absl::StrJoin(c.family_names(), ", ").c_str(),
                  c.default_algorithm, c.default_why);
      if (std::string(c.oracle_default_algorithm) != c.default_algorithm) {
        std::printf("  default algorithm of its oracle family (rows on the client): %s\n",
                    c.oracle_default_algorithm);
      }
      std::printf("\n");
    }
    for (const AlgorithmInfo* info : c.algorithms()) {
      if (!only.empty() && only != info->name) continue;
      std::printf("  %s (%s)\n    %s\n", info->name, c.name, info->summary);
      const AlgorithmOptions defaults = DefaultOptions(*info);
      for (const OptionInfo& o : OptionTable()) {
        if (!info->reads.Has(o.id)) continue;
        std::printf("    --%s=%s  %s; %s\n", o.name, OptionValueText(o, defaults).c_str(), o.help,
                    o.rule.Describe().c_str());
      }
      std::printf("\n");
    }
  }
  return kExitOk;
}

}  // namespace f2obo::cli
