// The flags of flags.def: their definitions and which subcommands take them.
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli.h"

#define F2OBO_CLI_FLAG(type, name, def, commands, help) ABSL_FLAG(type, name, def, help);
#define F2OBO_CLI_OPTION_FLAGS(commands)
#include "client/cli/flags.def"
#undef F2OBO_CLI_FLAG
#undef F2OBO_CLI_OPTION_FLAGS

namespace f2obo::cli {
namespace {

struct Entry {
  const char* name;  // nullptr: the algorithm option flags
  const char* commands;
};

const std::vector<Entry>& Table() {
  static const auto* table = new std::vector<Entry>{
#define F2OBO_CLI_FLAG(type, name, def, commands, help) {#name, commands},
#define F2OBO_CLI_OPTION_FLAGS(commands) {nullptr, commands},
#include "client/cli/flags.def"
#undef F2OBO_CLI_FLAG
#undef F2OBO_CLI_OPTION_FLAGS
  };
  return *table;
}

bool Takes(const Entry& e, absl::string_view command) {
  for (absl::string_view c : absl::StrSplit(e.commands, ' ', absl::SkipEmpty())) {
    if (c == command) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& GlobalFlagNames() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>;
    for (const Entry& e : Table()) {
      if (e.name != nullptr && Takes(e, "*")) v->emplace_back(e.name);
    }
    return v;
  }();
  return *names;
}

std::vector<std::string> CommandFlagNames(absl::string_view command) {
  std::vector<std::string> names;
  for (const Entry& e : Table()) {
    if (!Takes(e, command)) continue;
    if (e.name != nullptr) {
      names.emplace_back(e.name);
    } else {
      for (std::string& option : OptionFlagNames()) names.push_back(std::move(option));
    }
  }
  return names;
}

}  // namespace f2obo::cli
