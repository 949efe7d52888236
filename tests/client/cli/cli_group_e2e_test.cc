// End to end: the CLI's side-by-side groups (create-group, stream --group,
// delete --group) and evaluate, against the real server on loopback (see
// cli_e2e_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/client/cli/cli_e2e_fixture.h"

namespace f2obo {
namespace {

using testing::CliE2e;
using testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Result;
using testing::RunCli;
using testing::Spawn;
using testing::Wait;

TEST_F(CliE2e, GroupMembersEndExactlyWhereLoneSessionsStreamedTheSameWayEnd) {
  // loss_tuning: x (gamma_j, Delta_j) is unconstrained, so it moves.
  const Result created =
      Cli({"create-group", "--group=side", "--family=loss_tuning", "--features=4", "--classes=3",
           "--x0=1*3,0*3", "--seed=7", "--gamma=0.05", "--member=fo:f2obo:inner_steps=3",
           "--member=sf:sf2obo", "--member=af:af2obo:max_inner_iterations=20", "--member=ob:obbo"});
  ASSERT_EQ(created.code, 0) << created.err;
  EXPECT_THAT(created.out, HasSubstr("side\n"));
  EXPECT_THAT(created.out, HasSubstr("side.fo  f2obo"));
  EXPECT_THAT(created.out, HasSubstr("side.ob  obbo"));
  struct Lone {
    std::string id;
    std::vector<std::string> flags;
  };
  const std::vector<Lone> lone = {
      {"lone-fo", {"--algorithm=f2obo", "--inner_steps=3"}},
      {"lone-sf", {"--algorithm=sf2obo"}},
      {"lone-af", {"--algorithm=af2obo", "--max_inner_iterations=20"}},
      {"lone-ob", {"--algorithm=obbo"}},
  };
  for (const Lone& l : lone) {
    std::vector<std::string> args = {"create",       "--id=" + l.id, "--family=loss_tuning",
                                     "--features=4", "--classes=3",  "--x0=1*3,0*3",
                                     "--seed=7",     "--gamma=0.05"};
    args.insert(args.end(), l.flags.begin(), l.flags.end());
    const Result r = Cli(args);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::vector<std::string> drift = {Data(), "--rows_per_step=32", "--phase_steps=10",
                                          "--seed=7", "--label_noise=15:0.2"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), drift.begin(), drift.end());
    return a;
  };
  // 12 steps over StepsGroup, then the rest with unary StepGroup: the second
  // run resumes from the members' next_t.
  const Result first = Cli(with({"stream", "--group=side", "--steps=12", "--print_every=4"}));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("step 12 (12/12)"));
  for (const char* m : {"| fo loss", "| sf loss", "| af loss", "| ob loss"}) {
    EXPECT_THAT(first.out, HasSubstr(m));
  }
  EXPECT_THAT(first.out, HasSubstr("streamed 12 steps to group side"));
  const Result second =
      Cli(with({"stream", "--group=side", "--steps=18", "--mode=unary", "--print_every=6"}));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("step 13 (1/18)"));
  EXPECT_THAT(second.out, HasSubstr("next_t = 31"));
  for (const Lone& l : lone) {
    const Result r = Cli(with({"stream", "--session=" + l.id, "--steps=30"}));
    ASSERT_EQ(r.code, 0) << r.err;
  }

  const std::string names[] = {"fo", "sf", "af", "ob"};
  std::vector<std::string> xs;
  for (int i = 0; i < 4; ++i) {
    const Result member = Cli({"decision", "--session=side." + names[i], "--all"});
    const Result alone = Cli({"decision", "--session=" + lone[i].id, "--all"});
    ASSERT_EQ(member.code, 0) << member.err;
    ASSERT_EQ(alone.code, 0) << alone.err;
    EXPECT_EQ(Field(member.out, "t"), "31") << names[i];
    EXPECT_EQ(Field(member.out, "x"), Field(alone.out, "x")) << names[i];
    EXPECT_EQ(Field(member.out, "lambda"), Field(alone.out, "lambda")) << names[i];
    xs.push_back(Field(member.out, "x"));
  }
  // The comparison is not vacuous: the algorithms moved x, differently.
  EXPECT_NE(xs[0], "1 1 1 0 0 0");
  EXPECT_NE(xs[0], xs[1]);
  EXPECT_NE(xs[0], xs[3]);

  const Result shown = Cli({"group", "--group=side"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("group side: 4 members"));
  EXPECT_THAT(shown.out, HasSubstr("BLREG"));
  EXPECT_THAT(shown.out, ::testing::ContainsRegex("side\\.af +af2obo +31 +[0-9.e+-]+ +[0-9]+ "));
  EXPECT_THAT(shown.out, ::testing::ContainsRegex("side\\.ob +obbo +31 "));

  const Result missing = Cli({"group", "--group=nope"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND"));
  const Result stream_missing = Cli(with({"stream", "--group=nope", "--steps=2"}));
  EXPECT_EQ(stream_missing.code, 1);
  EXPECT_THAT(stream_missing.err, HasSubstr("NOT_FOUND"));
}

TEST_F(CliE2e, CreateGroupRejectsBadMembersNamingThem) {
  const std::vector<std::string> base = {"create-group", "--group=bad", "--features=4",
                                         "--classes=3"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return Cli(a);
  };
  const Result none = with({});
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("--member"));
  const Result shape = with({"--member=lonely"});
  EXPECT_EQ(shape.code, 2);
  EXPECT_THAT(shape.err, HasSubstr("not name:algorithm"));
  const Result key = with({"--member=a:f2obo:nonsense=1"});
  EXPECT_EQ(key.code, 2);
  EXPECT_THAT(key.err, HasSubstr("unknown option 'nonsense'"));
  const Result value = with({"--member=a:f2obo:gamma=fast"});
  EXPECT_EQ(value.code, 2);
  EXPECT_THAT(value.err, HasSubstr("option 'gamma': cannot parse 'fast'"));
  const Result algo = with({"--member=a:f2obo", "--member=b:nope"});
  EXPECT_EQ(algo.code, 2);
  EXPECT_THAT(algo.err, HasSubstr("member 'b'"));
  EXPECT_THAT(algo.err, HasSubstr("nope"));
  const Result option = with({"--member=a:f2obo:gamma=-1"});
  EXPECT_EQ(option.code, 2);
  EXPECT_THAT(option.err, HasSubstr("member 'a'"));
  EXPECT_THAT(option.err, HasSubstr("gamma"));
  // Refused by the server (duplicate member names): exit 1, nothing created.
  const Result dup = with({"--member=a:f2obo", "--member=a:sf2obo"});
  EXPECT_EQ(dup.code, 1);
  EXPECT_THAT(dup.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_EQ(Cli({"group", "--group=bad"}).code, 1);
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("bad.a")));
}

TEST_F(CliE2e, DeleteGroupRemovesTheGroupAndItsMembersButAMemberAloneIsRefused) {
  const Result created = Cli({"create-group", "--group=gone", "--features=4", "--classes=3",
                              "--member=a:f2obo", "--member=b:sf2obo"});
  ASSERT_EQ(created.code, 0) << created.err;
  const Result member = Cli({"delete", "--session=gone.a"});
  EXPECT_EQ(member.code, 1);
  EXPECT_THAT(member.err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(member.err, HasSubstr("member of group 'gone'"));
  const Result both = Cli({"delete", "--session=gone.a", "--group=gone"});
  EXPECT_EQ(both.code, 2);
  EXPECT_THAT(both.err, HasSubstr("exactly one of --session and --group"));

  const Result deleted = Cli({"delete", "--group=gone"});
  ASSERT_EQ(deleted.code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "deleted group gone (2 sessions)\ndeleted gone.a\ndeleted gone.b\n");
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("gone.")));
  EXPECT_EQ(Cli({"group", "--group=gone"}).code, 1);
  const Result again = Cli({"delete", "--group=gone"});
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(again.err, HasSubstr("group 'gone' not found"));
}

// The value in column `column` of the data row of `session` in evaluate's table.
double EvalColumn(const std::string& table, const std::string& session, const std::string& column) {
  std::istringstream in(table);
  std::string line;
  std::getline(in, line);
  std::istringstream head(line);
  std::vector<std::string> names;
  for (std::string w; head >> w;) names.push_back(w);
  const auto at = std::find(names.begin(), names.end(), column);
  if (at == names.end()) return -1;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::vector<std::string> cells;
    for (std::string w; row >> w;) cells.push_back(w);
    if (!cells.empty() && cells[0] == session && cells.size() == names.size()) {
      return std::stod(cells[at - names.begin()]);
    }
  }
  return -1;
}

TEST_F(CliE2e, EvaluateScoresTheDecisionOnHeldOutData) {
  const std::string test = "--test_data=" + *dir_ + "/test.csv";
  const std::string train = "--train_data=" + *dir_ + "/data.csv";
  const Result created = Cli({"create", "--id=scored", "--features=4", "--classes=3",
                              "--algorithm=f2obo", "--alpha=0.5", "--beta=0.5"});
  ASSERT_EQ(created.code, 0) << created.err;
  // At y = 0 every logit is 0: cross-entropy log 3, argmax class 0, so the
  // accuracy is the share of class 0 and the balanced accuracy 1/3.
  std::ifstream csv(*dir_ + "/test.csv");
  std::string line;
  std::getline(csv, line);
  int rows = 0, zeros = 0;
  while (std::getline(csv, line)) ++rows, zeros += line.back() == '0';
  const Result before = Cli({"evaluate", "--session=scored", test, train});
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_NEAR(EvalColumn(before.out, "scored", "test_loss"), std::log(3.0), 1e-12);
  EXPECT_NEAR(EvalColumn(before.out, "scored", "test_accuracy"), static_cast<double>(zeros) / rows,
              1e-12);
  EXPECT_NEAR(EvalColumn(before.out, "scored", "test_balanced_accuracy"), 1.0 / 3, 1e-12);
  EXPECT_NEAR(EvalColumn(before.out, "scored", "train_loss"), std::log(3.0), 1e-12);

  ASSERT_EQ(Cli(StreamArgs("scored", {"--steps=40", "--imbalance="})).code, 0);
  const std::string out_path = *dir_ + "/scored.csv";
  const Result after = Cli({"evaluate", "--session=scored", test, train, "--out=" + out_path});
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_THAT(after.out, HasSubstr("wrote 1 rows"));
  std::ifstream in(out_path);
  std::string header, row;
  ASSERT_TRUE(std::getline(in, header));
  ASSERT_TRUE(std::getline(in, row));
  EXPECT_EQ(header,
            "session,algorithm,t,test_loss,test_accuracy,test_balanced_accuracy,train_loss,"
            "train_accuracy,train_balanced_accuracy");
  std::vector<double> v;
  std::istringstream cells(row.substr(row.find(",41,") + 4));
  for (std::string c; std::getline(cells, c, ',');) v.push_back(std::stod(c));
  ASSERT_EQ(v.size(), 6u) << row;
  EXPECT_LT(v[0], std::log(3.0) - 0.2);  // learned: the held-out loss fell
  EXPECT_GT(v[1], 0.7);                  // the teacher is linear
  EXPECT_GT(v[2], 0.6);
  EXPECT_LT(v[3], std::log(3.0) - 0.2);

  const Result bad = Cli({"evaluate", "--session=scored", "--test_data=/nonexistent.csv"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--test_data"));
  EXPECT_EQ(Cli({"evaluate", test}).code, 2);  // neither --session nor --group
  const Result gone = Cli({"evaluate", "--session=nope", test});
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("NOT_FOUND"));
}

}  // namespace
}  // namespace f2obo
