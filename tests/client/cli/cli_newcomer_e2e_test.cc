// End to end: the documented commands as a newcomer runs them, the
// real f2obo-cli against the real server on loopback (cli_e2e_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "f2obo/v1/f2obo.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/client/cli/cli_e2e_fixture.h"

namespace f2obo {
namespace {

using testing::CliE2e;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Result;

// A regression CSV shaped like sklearn's diabetes: 442 rows, 10 features,
// integer targets in [25, 346] (which read as 347 "classes").
std::string WriteDiabetesLike(const std::string& dir) {
  const std::string path = dir + "/diabetes_like.csv";
  std::ofstream csv(path);
  csv << "age,sex,bmi,bp,s1,s2,s3,s4,s5,s6,target\n";
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 0.05);
  for (int i = 0; i < 442; ++i) {
    double score = 152;
    for (int j = 0; j < 10; ++j) {
      const double a = normal(rng);
      score += a * (j % 3 == 0 ? 900 : -300);
      csv << a << ",";
    }
    csv << std::max(25, std::min(346, static_cast<int>(score))) << "\n";
  }
  return path;
}

// docs/api.md's simple-bilevel command on a regression CSV
// with integer targets.  It used to spin for ever (the targets read as 347
// classes, the default --imbalance keeping class i w.p. 0.6^i); a
// regression family draws rows uniformly, so it finishes.
TEST_F(CliE2e, ReadmeSimpleBilevelCommandFinishesOnARegressionCsvWithIntegerTargets) {
  const std::string data = WriteDiabetesLike(*dir_);
  const Result r = Cli(
      {"stream", "--create", "--id=ls-diabetes", "--family=least_squares", "--constraint=l1_ball:5",
       "--algorithm=ir_scg", "--data=" + data, "--steps=60", "--print_every=20"},
      /*limit_seconds=*/60);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("streamed 60 steps to ls-diabetes"));
  EXPECT_THAT(r.out, HasSubstr("step 20 (20/60)"));  // progress along the way
  // The session was created without classes: a regression family has none.
  const Result info = Cli({"sessions"});
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("ls-diabetes"));
}

// A classification family on the same file does sample by class, and the
// sampler cannot keep rows: it says so, precisely, and creates nothing.
TEST_F(CliE2e, ASamplerThatCannotKeepRowsSaysWhyAndCreatesNothing) {
  const std::string data = WriteDiabetesLike(*dir_);
  const Result r = Cli({"stream", "--create", "--id=hpo-diabetes", "--family=logistic_hpo",
                        "--data=" + data, "--steps=10"},
                       /*limit_seconds=*/60);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("kept 0 of 512 rows in 512000 draws"));
  EXPECT_THAT(r.err, HasSubstr("rho = 0.6"));
  EXPECT_THAT(r.err, HasSubstr("347 classes"));
  EXPECT_THAT(r.err, HasSubstr("--imbalance=''"));
  const Result get = Cli({"decision", "--session=hpo-diabetes"});
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.err, HasSubstr("NOT_FOUND"));
  // --label_noise has no meaning for a regression family: a usage error.
  const Result noise =
      Cli({"stream", "--create", "--id=ls-noise", "--family=least_squares",
           "--constraint=l1_ball:5", "--data=" + data, "--steps=5", "--label_noise=2:0.1"},
          60);
  EXPECT_EQ(noise.code, 2) << noise.out << noise.err;
  EXPECT_THAT(noise.err, HasSubstr("--label_noise: family least_squares is a regression family"));
}

// With no --box/--constraint the CLI sends none and the
// server fills in the family's default, the one a Python client gets too.
TEST_F(CliE2e, TheFamilysDefaultConstraintIsTheServersForEveryClient) {
  const Result created =
      Cli({"create", "--id=ridge-default", "--family=ridge_hpo", "--features=4", "--verbose"});
  ASSERT_EQ(created.code, 0) << created.err;
  auto stub = v1::F2obo::NewStub(
      grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
  // As Python's create_session(family="ridge_hpo", algorithm="f2obo", features=4).
  grpc::ClientContext ctx;
  v1::CreateSessionRequest req;
  req.set_session_id("ridge-bare");
  req.mutable_spec()->mutable_family()->set_name("ridge_hpo");
  req.mutable_spec()->mutable_family()->set_features(4);
  req.mutable_spec()->set_algorithm("f2obo");
  v1::SessionInfo bare;
  const grpc::Status s = stub->CreateSession(&ctx, req, &bare);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(bare.spec().constraint().has_box());
  EXPECT_EQ(bare.spec().constraint().box().lo(0), 0.0);
  EXPECT_EQ(bare.spec().constraint().box().hi(0), 1.0);
  grpc::ClientContext get_ctx;
  v1::GetSessionRequest get;
  get.set_session_id("ridge-default");
  v1::SessionInfo via_cli;
  ASSERT_TRUE(stub->GetSession(&get_ctx, get, &via_cli).ok());
  EXPECT_EQ(via_cli.spec().constraint().SerializeAsString(),
            bare.spec().constraint().SerializeAsString());
  // --box=none still asks for no constraint, and ridge_hpo refuses it.
  const Result none =
      Cli({"create", "--id=ridge-none", "--family=ridge_hpo", "--features=4", "--box=none"});
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_THAT(none.err, HasSubstr("ridge_hpo needs a box"));
}

// The multi-task class's default algorithm works on data
// the size of the README's (sklearn's digits: 64 features, 10 classes, so
// y_dim = 650, which rsvrb's explicit matrices refuse above 256).
TEST_F(CliE2e, TheMultitaskDefaultAlgorithmTakesDigitsSizedData) {
  const std::string path = *dir_ + "/digits_like.csv";
  {
    std::ofstream csv(path);
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> pixel(0, 16);
    for (int i = 0; i < 200; ++i) {
      for (int j = 0; j < 64; ++j) csv << pixel(rng) / 16.0 << ",";
      csv << i % 10 << "\n";
    }
  }
  const Result r = Cli({"stream", "--create", "--id=mt-digits", "--tasks=4", "--data=" + path,
                        "--steps=3", "--rows_per_step=40", "--imbalance="},
                       /*limit_seconds=*/60);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("streamed 3 steps to mt-digits"));
  const Result list = Cli({"sessions"});
  EXPECT_THAT(list.out, HasSubstr("mt_f2obo"));
}

// The small things a newcomer trips over.
TEST_F(CliE2e, SmallThingsANewcomerTripsOver) {
  const Result typo = Cli({"create", "--id=typo", "--gama=0.01"});
  EXPECT_EQ(typo.code, 2);
  EXPECT_THAT(typo.err, HasSubstr("unknown flag --gama (did you mean --gamma?)"));
  const Result far = Cli({"create", "--id=typo", "--zzzzzz=1"});
  EXPECT_EQ(far.code, 2);
  EXPECT_THAT(far.err, Not(HasSubstr("did you mean")));

  const Result help = Cli({"help", "create"});
  EXPECT_THAT(help.out, HasSubstr("bilevel | simple_bilevel | multitask_bilevel"));

  const Result ls = Cli({"create", "--id=ls-eval", "--family=least_squares", "--features=4",
                         "--constraint=l1_ball:3"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  const Result eval = Cli({"evaluate", "--session=ls-eval", "--test_data=" + *dir_ + "/test.csv"});
  EXPECT_EQ(eval.code, 2);
  EXPECT_THAT(eval.err, HasSubstr("'ls-eval' is a simple_bilevel session (family least_squares)"));
  EXPECT_THAT(eval.err, Not(HasSubstr("unknown family")));

  // sessions: rows read (not "rows"), and no lambda or BLReg for a simple
  // bilevel session.
  const Result list = Cli({"sessions"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("ROWS_READ"));
  std::istringstream lines(list.out);
  bool seen = false;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cols(line);
    std::vector<std::string> c{std::istream_iterator<std::string>(cols), {}};
    if (c.empty() || c[0] != "ls-eval") continue;
    seen = true;
    ASSERT_EQ(c.size(), 7u) << line;
    EXPECT_EQ(c[4], "-") << line;  // BLREG
    EXPECT_EQ(c[5], "-") << line;  // LAMBDA
  }
  EXPECT_TRUE(seen) << list.out;

  // decision --all: each number as the shortest text that reads back exactly.
  const Result q = Cli(
      {"create", "--id=q-digits", "--family=quadratic", "--x_dim=2", "--y_dim=2", "--x0=0.1,0.3"});
  ASSERT_EQ(q.code, 0) << q.err;
  const Result d = Cli({"decision", "--session=q-digits", "--all"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("x: 0.1 0.3\n"));

  // The start-up line names the dashboard.
  EXPECT_THAT(
      server_->banner(),
      HasSubstr("dashboard on http://127.0.0.1:" + std::to_string(server_->metrics_port()) + "/"));
}

}  // namespace
}  // namespace f2obo
