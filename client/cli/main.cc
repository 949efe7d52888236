// f2obo-cli: command-line client of the f2obo service.
//
//   f2obo-cli <command> [--flag=value ...]
//
// Flags are Abseil flags, parsed here per subcommand: a flag that does not
// apply to the subcommand, an unknown flag or a bad value is a usage error
// (exit 2).  `f2obo-cli help [command]` and `<command> --help` describe the
// flags of a subcommand.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli/cli.h"
#include "core/cpu_features.h"

namespace f2obo::cli {
namespace {

struct Command {
  std::string name;
  std::string summary;
  std::string details;
  int (*run)();
  // Besides the global ones: those flags.def gives this command.
  std::vector<std::string> flags = CommandFlagNames(name);
};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"create", "Create a session; prints its id",
       "Option flags left unset take the algorithm's defaults (--verbose prints the "
       "filled-in spec).  --dataset infers --features and --classes.  --dry_run validates "
       "the spec locally and prints the request instead of sending it.",
       RunCreate},
      {"algorithms", "List problem classes, families, algorithms and their options",
       "For each problem class: its families and algorithms; for each algorithm: the "
       "options it reads (every option flag of create/stream/create-group), with its "
       "default and the values accepted.  --algorithm=<name> shows one algorithm.",
       RunAlgorithms},
      {"stream", "Replay a dataset as a drifting stream into a session",
       "Sends steps next_t .. next_t + steps - 1 (or .. --until) of the drifting stream, "
       "starting from the session's next_t, so re-running resumes an interrupted stream.  "
       "--create creates the session first from the spec flags.  --group=<id> instead "
       "uploads each step once to every member of a group (StepsGroup), starting from "
       "the smallest next_t of its members, with one progress entry per member.  A "
       "multi-task session (--tasks=m at --create, or one created so) gets the dataset split "
       "into m tasks (task i: rows r with r % m == i), --tasks_per_step of them sampled per "
       "step, each step's batches tagged with their task.",
       RunStream},
      {"create-group", "Create a side-by-side group: one family, several algorithms",
       "Family, dimensions, constraint, seed and metrics policy come from the spec flags "
       "once; each --member=name:algorithm[:key=value,...] adds a member session "
       "<group>.<name> (repeat the flag, 1 to 16 members).  Keys are AlgorithmOptions "
       "fields (e.g. gamma=0.01,inner_steps=3,alpha_auto=true); option flags such as "
       "--gamma apply to every member, a member's own keys win.  --group (or --id) names "
       "the group.  "
       "Then 'stream --group=<id>' uploads each step once for all members.",
       RunCreateGroup},
      {"group", "Show a group's members: algorithm, next t, BLReg, lambda", "", RunGroup},
      {"evaluate", "Score a session's current decision (x, y) on a held-out dataset",
       "Fetches the spec and the decision (x_t, y_t) of --session (or of every member of "
       "--group) and evaluates them with the family's own code on --test_data (default: the "
       "Fashion-MNIST test set) and, when --train_data is set, on a training set: mean "
       "cross-entropy of the plain logits, accuracy, balanced accuracy (mean per-class "
       "recall over the classes present).  Classification families (logistic_hpo, "
       "loss_tuning) only.  Prints a table, or CSV with --out.",
       RunEvaluate},
      {"decision", "Print a session's current decision (t, lambda, x)", "", RunDecision},
      {"sessions", "List sessions as a table", "", RunSessions},
      {"delete", "Delete a session, or a group with all its members",
       "--session deletes one session; a member of a group is refused (naming the group). "
       "--group deletes the group and every member session.",
       RunDelete},
      {"metrics", "Write a session's per-step metrics as CSV",
       "Columns: t,lambda,z_iterations,y_iterations,cap_hit,residual_z,residual_y,"
       "upper_loss_before,accuracy_before,round_seconds,regret_term,blreg,"
       "hypergradient_error,value,variation,drift,exact_skipped_reason (empty when absent).",
       RunMetrics},
      {"checkpoint", "Checkpoint a session's current state; lists its checkpoints",
       "Keeps the current state of --session (t = next_t - 1) as a checkpoint for rollback "
       "and fork, besides the server's own every --checkpoint_every steps.  Prints the kept "
       "checkpoints (steps t).",
       RunCheckpoint},
      {"rollback", "Roll a session back to a checkpoint (undo a stretch of steps)",
       "Restores the checkpoint of --session at step --to_t exactly: the next step expected "
       "is to_t + 1, replies and checkpoints after it are dropped.  Only kept checkpoints "
       "(see 'checkpoint' or GetSession) can be restored; a group member is refused.",
       RunRollback},
      {"fork", "Branch a new session from a session's checkpoint or current state",
       "Creates session --id (empty: the server chooses) from --session at step --at_t "
       "(unset: its current state); it continues independently.  --algorithm (same problem "
       "class, a state layout that fits) and option flags override the source's; with "
       "another algorithm, unset options take its defaults.",
       RunFork},
      {"rebalance", "Move sessions to the replicas a routing proxy maps their keys to",
       "Asks --proxy where each routing key held by the --replicas goes (GetServerInfo) and "
       "moves every misplaced key there under a fence: fence on the old owner (its steps get "
       "UNAVAILABLE naming the new one), export, import (a group as a unit), drop the old "
       "copies.  Safe to rerun after a crash: it completes or undoes interrupted moves.",
       RunRebalance},
      {"export", "Write a session (spec, state, reply cache) to a file",
       "Streams --session from the server (ExportSessionStream) into --file, one chunk at a "
       "time whatever the session's size: the chunks length-delimited after a magic line "
       "(client/session_file.h), the last carrying the CRC-32 of the content.  The file "
       "appears only once complete.",
       RunExport},
      {"import", "Create a session from a file written by export",
       "Streams --file to the server (ImportSessionStream), one chunk at a time, as session "
       "--id (empty: the exported id).  The file is checked as it is read (every chunk "
       "parses, the end chunk comes last, its CRC-32 matches): a damaged or cut file is "
       "refused (exit 2) and the server keeps nothing, as for any refusal of the server's.",
       RunImport},
      {"health", "Exit 0 iff the server's health service reports SERVING", "", RunHealth},
      {"bench", "Load generator: concurrent synthetic streams, throughput and latency",
       "Creates --sessions sessions, streams --steps synthetic steps into each (one Steps "
       "stream per session), prints steps/s, rows/s, MB/s (serialized batches uploaded) and "
       "p50/p95/p99 client-observed step latency, then deletes the sessions.  --features "
       "and --classes default to 784 and 10.  'loadgen' is the same command.",
       RunLoadgen},
      {"loadgen", "Same as bench", "", RunLoadgen},
  };
  return *commands;
}

const Command* Find(const std::string& name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Wraps `text` at 78 columns with `indent` spaces before every line.
std::string Wrap(const std::string& text, int indent) {
  std::string out, line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && line.size() + word.size() + 1 + indent > 78) {
      absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
  return out;
}

void PrintFlags(FILE* out, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    std::string def = flag->DefaultValue();
    if (flag->IsOfType<std::string>()) def = absl::StrCat("\"", def, "\"");
    if (def.empty()) def = "unset";
    std::fprintf(out, "  --%s (default: %s)\n%s", name.c_str(), def.c_str(),
                 Wrap(flag->Help(), 6).c_str());
  }
}

void PrintOverview(FILE* out) {
  std::fprintf(out,
               "f2obo-cli: command-line client of the f2obo online bilevel optimization "
               "service.\n\nUsage: f2obo-cli <command> [--flag=value ...]\n\nCommands:\n");
  for (const Command& c : Commands()) {
    std::fprintf(out, "  %-12s %s\n", c.name.c_str(), c.summary.c_str());
  }
  std::fprintf(out, "  %-12s %s\n", "help", "This list, or 'help <command>' for its flags");
  std::fprintf(out, "\nGlobal flags (every command):\n");
  PrintFlags(out, GlobalFlagNames());
  std::fprintf(out,
               "\nExit codes: 0 ok, 1 RPC error, 2 usage error.  "
               "'f2obo-cli <command> --help' lists a command's flags.\n");
}

void PrintCommandHelp(FILE* out, const Command& c) {
  std::fprintf(out, "Usage: f2obo-cli %s [--flag=value ...]\n\n%s\n", c.name.c_str(),
               Wrap(c.summary + ". " + c.details, 0).c_str());
  if (!c.flags.empty()) {
    std::fprintf(out, "Flags:\n");
    PrintFlags(out, c.flags);
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "Global flags:\n");
  PrintFlags(out, GlobalFlagNames());
}

bool IsBool(const absl::CommandLineFlag& f) {
  return f.IsOfType<bool>() || f.IsOfType<std::optional<bool>>();
}

struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<absl::CommandLineFlag*, std::string>> values;
  std::vector<std::string> errors;  // reported unless help was asked for
  bool help = false, helpfull = false;
};

// Edit distance (insertions, deletions, substitutions, adjacent swaps).
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// " (did you mean --x?)" for the flag of `known` nearest to `name` when it
// is a likely typo (at most 2 edits, and fewer than half the name), else "".
std::string Suggestion(const std::string& name, const std::vector<std::string>& known) {
  if (name.empty()) return "";
  const std::string* best = nullptr;
  size_t best_distance = std::min<size_t>(2, (name.size() - 1) / 2);
  for (const std::string& k : known) {
    const size_t d = Distance(name, k);
    if (d <= best_distance && (best == nullptr || d < best_distance)) {
      best = &k;
      best_distance = d;
    }
  }
  return best == nullptr ? "" : absl::StrCat(" (did you mean --", *best, "?)");
}

Args Split(int argc, char** argv) {
  Args a;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      a.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    arg = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = arg.substr(eq + 1);
    if (name == "help" || name == "h" || name == "helpfull") {
      (name == "helpfull" ? a.helpfull : a.help) = true;
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no") && !value) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      if (flag != nullptr && IsBool(*flag)) {
        a.values.emplace_back(flag, "false");
        continue;
      }
      flag = nullptr;
    }
    if (flag == nullptr) {
      a.errors.push_back(absl::StrCat("unknown flag --", name));
      continue;
    }
    if (!value) {
      if (IsBool(*flag)) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        a.errors.push_back(absl::StrCat("flag --", name, " needs a value"));
        continue;
      }
    }
    a.values.emplace_back(flag, *value);
  }
  return a;
}

int Main(int argc, char** argv) {
  Args args = Split(argc, argv);
  const std::string name = args.positional.empty() ? "" : args.positional[0];
  if (args.helpfull) {
    PrintOverview(stdout);
    for (const Command& c : Commands()) {
      std::printf("\n---- %s\n", c.name.c_str());
      PrintCommandHelp(stdout, c);
    }
    return kExitOk;
  }
  if (name == "help" || (args.help && name.empty())) {
    const std::string topic = args.positional.size() > 1 ? args.positional[1] : "";
    if (topic.empty()) {
      PrintOverview(stdout);
      return kExitOk;
    }
    const Command* c = Find(topic);
    if (c == nullptr) return UsageError(absl::StrCat("unknown command '", topic, "'"));
    PrintCommandHelp(stdout, *c);
    return kExitOk;
  }
  if (name.empty()) {
    PrintOverview(stderr);
    return UsageError("no command given");
  }
  const Command* command = Find(name);
  if (command == nullptr) {
    return UsageError(absl::StrCat("unknown command '", name, "' (see 'f2obo-cli help')"));
  }
  if (args.help) {
    PrintCommandHelp(stdout, *command);
    return kExitOk;
  }
  if (!args.errors.empty()) {
    std::string error = args.errors.front();
    if (absl::string_view flag = error; absl::ConsumePrefix(&flag, "unknown flag --")) {
      absl::StrAppend(&error,
                      Suggestion(std::string(flag), Concat(GlobalFlagNames(), command->flags)));
    }
    return UsageError(absl::StrCat(error, " (see 'f2obo-cli help ", name, "')"));
  }
  if (args.positional.size() > 1) {
    return UsageError(absl::StrCat("unexpected argument '", args.positional[1], "'"));
  }
  for (auto& [flag, value] : args.values) {
    const std::string flag_name(flag->Name());
    const auto& global = GlobalFlagNames();
    if (std::find(global.begin(), global.end(), flag_name) == global.end() &&
        std::find(command->flags.begin(), command->flags.end(), flag_name) ==
            command->flags.end()) {
      return UsageError(absl::StrCat("flag --", flag_name, " does not apply to '", name,
                                     "' (see 'f2obo-cli help ", name, "')"));
    }
    if (flag_name == "member") MemberFlagValues().push_back(value);  // repeatable
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(absl::StrCat("--", flag_name, ": ", error));
    }
  }
  return command->run();
}

}  // namespace
}  // namespace f2obo::cli

int main(int argc, char** argv) {
  // Before anything runs code compiled for F2OBO_ARCH's extensions.
  if (absl::Status cpu = f2obo::CheckCpuFeatures(); !cpu.ok()) {
    std::fprintf(stderr, "f2obo-cli: %s\n", std::string(cpu.message()).c_str());
    return f2obo::cli::kExitRpc;
  }
  try {
    return f2obo::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "f2obo-cli: %s\n", e.what());
    return f2obo::cli::kExitRpc;
  }
}
