// Every algorithm option of the proto can be set from the
// CLI, from its one declaration (core/options.def): for each field of
// AlgorithmOptions, `f2obo-cli create --dry_run --<field>=<value>` (the real
// binary, no server) puts exactly that value into the request, and
// `f2obo-cli help create` and `f2obo-cli algorithms` document it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/problem_registry.h"
#include "f2obo/v1/f2obo.pb.h"
#include "f2obo/v1/options_convert.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/client/cli/cli_e2e_fixture.h"

namespace f2obo::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Candidate values, as CLI text, other than the default.
std::vector<std::string> Candidates(const OptionInfo& info) {
  switch (info.type) {
    case OptionType::kBool:
      return {info.default_value != 0.0 ? "false" : "true"};
    case OptionType::kChoice:
      return {info.choices[info.default_value == 0.0 ? 1 : 0]};
    case OptionType::kInt:
      return {std::to_string(static_cast<int>(info.default_value) + 1), "1"};
    case OptionType::kDouble:
      break;
  }
  // 1.5 last: a factor in [1, 2] (inner_step_growth), after the others.
  return {"0.015625", "0.75", "2.5", "40", "1.5"};
}

// Options set with the one under test, when a non-default value of it is
// only valid together with another (fixed beta_scaling needs tau = 0 or a
// lambda_max): none, or tau = 0.
const std::vector<std::vector<std::pair<std::string, std::string>>> kCompanions = {{},
                                                                                   {{"tau", "0"}}};

// An algorithm that reads `info` and accepts `text` for it with
// `companions` (its other options at their defaults), or "" if none.
std::string ReaderAccepting(const OptionInfo& info, const std::string& text,
                            const std::vector<std::pair<std::string, std::string>>& companions,
                            v1::AlgorithmOptions* wire) {
  for (const ProblemClassEntry& c : ProblemClasses()) {
    for (const AlgorithmInfo* a : c.algorithms()) {
      if (!a->reads.Has(info.id)) continue;
      wire->Clear();
      bool ok = SetOptionFromText(info.name, text, wire).ok();
      for (const auto& [name, value] : companions) {
        ok = ok && a->reads.Has(FindOption(name)->id) && SetOptionFromText(name, value, wire).ok();
      }
      AlgorithmOptions o = DefaultOptions(*a);
      if (ok && ApplyOptions(*wire, &o).ok() && ValidateAlgorithmOptions(*a, o).ok()) {
        return a->name;
      }
    }
  }
  return "";
}

TEST(CliOptions, EveryProtoOptionCanBeSetFromItsFlag) {
  const google::protobuf::Descriptor* d = v1::AlgorithmOptions::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const std::string name = d->field(i)->name();
    const OptionInfo* info = FindOption(name);
    ASSERT_NE(info, nullptr) << name;
    std::string algorithm, text;
    std::vector<std::string> args = {"create", "--dry_run", "--family=quadratic", "--x_dim=2",
                                     "--y_dim=2"};
    v1::AlgorithmOptions expected;
    for (const auto& companions : kCompanions) {
      for (const std::string& candidate : Candidates(*info)) {
        algorithm = ReaderAccepting(*info, candidate, companions, &expected);
        if (algorithm.empty()) continue;
        text = candidate;
        for (const auto& [n, v] : companions) args.push_back("--" + n + "=" + v);
        break;
      }
      if (!algorithm.empty()) break;
    }
    ASSERT_FALSE(algorithm.empty()) << "no algorithm accepts a non-default " << name;
    if (FindAlgorithm(algorithm)->problem_class == ProblemClass::kSimpleBilevel) {
      // A family and a set (with an LMO) of the algorithm's class.
      args[2] = "--family=least_squares";
      args[3] = "--features=3";
      args[4] = "--constraint=l1_ball:1";
    }
    args.push_back("--algorithm=" + algorithm);
    // A multi-task algorithm's family: --tasks makes quadratic multitask_quadratic.
    if (FindAlgorithm(algorithm)->problem_class == ProblemClass::kMultitaskBilevel) {
      args.push_back("--tasks=2");
    }
    args.push_back("--" + name + "=" + text);
    const Result r = RunCli(args);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    v1::CreateSessionRequest req;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(r.out, &req)) << r.out;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(req.spec().options(), expected))
        << name << "=" << text << " with " << algorithm << " gave\n"
        << req.spec().options().DebugString();
  }
}

// Without blanks and line breaks: help text is wrapped for the terminal.
std::string Squeezed(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\n') out.push_back(c);
  }
  return out;
}

TEST(CliOptions, HelpDocumentsEveryOptionFlag) {
  const Result create = RunCli({"help", "create"});
  ASSERT_EQ(create.code, 0) << create.err;
  const Result algorithms = RunCli({"algorithms"});
  ASSERT_EQ(algorithms.code, 0) << algorithms.err;
  for (const OptionInfo& info : OptionTable()) {
    EXPECT_THAT(create.out, HasSubstr(std::string("--") + info.name + " ")) << info.name;
    EXPECT_THAT(Squeezed(create.out), HasSubstr(Squeezed(info.help))) << info.name;
    EXPECT_THAT(algorithms.out, HasSubstr(std::string("--") + info.name + "=")) << info.name;
  }
  for (const std::string& a : AlgorithmNames(ProblemClass::kBilevel)) {
    EXPECT_THAT(algorithms.out, HasSubstr("  " + a + " (bilevel)")) << a;
  }
  // Each class names its default algorithm and says why.
  for (const ProblemClassEntry& c : ProblemClasses()) {
    EXPECT_THAT(algorithms.out, HasSubstr(std::string("  default algorithm: ") +
                                          c.default_algorithm + "\n    why: " + c.default_why))
        << c.name;
    EXPECT_GT(std::string(c.default_why).size(), 20u) << c.name;
  }
  // --algorithm's help leaves the defaults to the server and `algorithms`
  // (a default named in help text goes stale when the registry changes it).
  for (const ProblemClassEntry& c : ProblemClasses()) {
    for (const AlgorithmInfo* a : c.algorithms()) {
      EXPECT_THAT(Squeezed(create.out),
                  Not(HasSubstr(Squeezed(std::string(a->name) + " for " + c.name))))
          << a->name;
    }
  }
  EXPECT_THAT(Squeezed(create.out),
              HasSubstr(Squeezed("empty: the class's default, the server's (`f2obo-cli "
                                 "algorithms` names each class's and why)")));
}

TEST(CliOptions, AnInvalidOptionIsAUsageErrorNamingTheField) {
  const Result r = RunCli({"create", "--dry_run", "--family=quadratic", "--x_dim=2", "--y_dim=2",
                           "--algorithm=sf2obo", "--tau=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("options.tau: 1 > beta_decay"));
  const Result wrong_class = RunCli({"create", "--dry_run", "--family=quadratic", "--x_dim=2",
                                     "--y_dim=2", "--problem_class=nope"});
  EXPECT_EQ(wrong_class.code, 2);
  EXPECT_THAT(wrong_class.err, HasSubstr("problem_class: unknown class 'nope'"));
}

// An option flag the session's algorithm does not read is a
// usage error naming it and the algorithm, before anything is sent: with
// no --algorithm, the class default's (sf2obo has no beta_scaling).  A
// group's shared option flag must be read by one member at least.
TEST(CliOptions, AnOptionTheAlgorithmDoesNotReadIsAUsageErrorNamingBoth) {
  const Result by_default =
      RunCli({"create", "--dry_run", "--family=ridge_hpo", "--features=5", "--beta_scaling=fixed"});
  EXPECT_EQ(by_default.code, 2);
  EXPECT_THAT(by_default.err,
              HasSubstr("options.beta_scaling: not read by algorithm 'sf2obo' (the bilevel class "
                        "default); name an algorithm that reads it (f2obo, f2obo_sl, af2obo) or "
                        "leave it unset"));
  const Result named = RunCli({"create", "--dry_run", "--family=ridge_hpo", "--features=5",
                               "--algorithm=f2obo", "--beta_scaling=fixed"});
  EXPECT_EQ(named.code, 0) << named.err;
  const Result group = RunCli({"create-group", "--group=g", "--family=ridge_hpo", "--features=5",
                               "--delta=0.5", "--member=a:f2obo", "--member=b:sobow"});
  EXPECT_EQ(group.code, 2);
  EXPECT_THAT(group.err,
              HasSubstr("spec.options.delta: read by no member's algorithm (a: f2obo, b: sobow)"));
  const Result member = RunCli({"create-group", "--group=g", "--family=ridge_hpo", "--features=5",
                                "--member=a:f2obo", "--member=b:sobow:beta=0.5"});
  EXPECT_EQ(member.code, 2);
  EXPECT_THAT(member.err, HasSubstr("member 'b': options.beta: not read by algorithm 'sobow'"));
}

// --token_file: the token alone, or the server's own '<role> <token>' file
// (its write token), is sent; a token file that cannot be read is a usage
// error before any call.
TEST(CliOptions, TokenFileAuthenticatesAgainstAServerWithTokens) {
  const std::string dir = MakeTempDir();
  {
    std::ofstream(dir + "/server-tokens")
        << "# roles\nread r-token-0123456789abcdef\nwrite w-token-0123456789abcdef\n";
    std::ofstream(dir + "/alone") << "w-token-0123456789abcdef\n";
  }
  std::filesystem::permissions(dir + "/server-tokens", std::filesystem::perms::owner_read |
                                                           std::filesystem::perms::owner_write);
  ServerProcess server({"--token_file=" + dir + "/server-tokens"});
  ASSERT_TRUE(server.started()) << server.banner() << server.Stderr();
  const std::string at = "--server=" + server.target();
  const Result none = RunCli({"sessions", at});
  EXPECT_EQ(none.code, 1);
  EXPECT_THAT(none.err, HasSubstr("UNAUTHENTICATED"));
  for (const char* file : {"/server-tokens", "/alone"}) {
    // delete needs a write token: NOT_FOUND (not PERMISSION_DENIED) shows it was sent.
    const Result r = RunCli({"delete", at, "--session=nope", "--token_file=" + dir + file});
    EXPECT_EQ(r.code, 1) << file;
    EXPECT_THAT(r.err, HasSubstr("NOT_FOUND")) << file << ": " << r.err;
  }
  const Result missing = RunCli({"sessions", at, "--token_file=" + dir + "/missing"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--token_file: cannot read"));
}

}  // namespace
}  // namespace f2obo::testing
