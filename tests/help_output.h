// Runs a program with one argument and returns what it printed (stdout and
// stderr together), for the --help tests of the two binaries.
#ifndef F2OBO_TESTS_HELP_OUTPUT_H_
#define F2OBO_TESTS_HELP_OUTPUT_H_

#include <cstdio>
#include <string>

namespace f2obo::testing {

inline std::string RunForOutput(const std::string& program, const std::string& arg) {
  const std::string command = "'" + program + "' " + arg + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "<popen failed>";
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  pclose(pipe);
  return out;
}

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_HELP_OUTPUT_H_
