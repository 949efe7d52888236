// Every problem class has its entry in each layer's per-class list: the
// core's (core/problem_classes.h, whose entries ProblemClasses() returns),
// the wire's (proto/f2obo/v1/class_wire.cc) and the presentation's
// (server/presentation/class_presentation.cc).  The tests walk the core's
// list and ask the other layers for each class in it, so a class added to
// the core but forgotten in a layer fails here, instead of being served
// with another class's code.  ClassReport and ClassMetrics follow from the
// core's list, one alternative per class at its id (the wire converts by
// that index).
#include <algorithm>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/class_metrics.h"
#include "core/oracle.h"
#include "core/problem_classes.h"
#include "core/problem_registry.h"
#include "core/step_report.h"
#include "f2obo/v1/class_wire.h"
#include "f2obo/v1/convert.h"
#include "gtest/gtest.h"
#include "server/presentation/class_presentation.h"

namespace f2obo {
namespace {

constexpr int kClasses = static_cast<int>(std::variant_size_v<ClassReport>);
static_assert(std::variant_size_v<ClassMetrics> == kClasses,
              "one ClassMetrics alternative per ClassReport alternative");
static_assert(static_cast<int>(AllProblemClasses::kSize) == kClasses,
              "one ClassReport alternative per class");

// A round report of class `i` (the alternative at index i).
template <std::size_t... I>
StepReport ReportOfClass(std::size_t i, std::index_sequence<I...>) {
  StepReport r;
  ((i == I ? (void)r.detail.emplace<I>() : (void)0), ...);
  return r;
}

// Exact metrics of class `i` (the alternative at index i).
template <std::size_t... I>
ClassMetrics MetricsOfClass(std::size_t i, std::index_sequence<I...>) {
  ClassMetrics m;
  ((i == I ? (void)m.emplace<I>() : (void)0), ...);
  return m;
}

TEST(ClassEntries, EveryClassHasExactlyOneCoreEntryThatParsesBackAndCreates) {
  EXPECT_EQ(static_cast<int>(ProblemClasses().size()), kClasses);
  for (int i = 0; i < kClasses; ++i) {
    const ProblemClass c = static_cast<ProblemClass>(i);
    int entries = 0;
    for (const ProblemClassEntry& e : ProblemClasses()) entries += e.id == c ? 1 : 0;
    ASSERT_EQ(entries, 1) << "class " << i;
    const std::string name(ProblemClassName(c));
    absl::StatusOr<ProblemClass> parsed = ParseProblemClass(name);
    ASSERT_TRUE(parsed.ok()) << "class " << i << ": " << parsed.status();
    EXPECT_EQ(*parsed, c);
    const ProblemClassEntry& e = GetProblemClass(c);
    EXPECT_FALSE(e.family_names().empty()) << name;
    const std::vector<std::string> algorithms = AlgorithmNames(c);
    EXPECT_NE(std::find(algorithms.begin(), algorithms.end(), e.default_algorithm),
              algorithms.end())
        << name << "'s default algorithm " << e.default_algorithm;
    // The oracle family's default is the class's and runs without the
    // rows and HVPs an oracle family keeps on the client (core/oracle.h).
    const AlgorithmInfo* oracle_default = FindAlgorithm(e.oracle_default_algorithm);
    ASSERT_NE(oracle_default, nullptr) << name;
    EXPECT_EQ(oracle_default->problem_class, c) << name;
    EXPECT_TRUE(oracle_default->first_order && !oracle_default->keeps_rows) << name;
    EXPECT_NE(e.create, nullptr) << name;
    EXPECT_NE(e.family_is_classification, nullptr) << name;
  }
}

// A spec without an algorithm gets DefaultAlgorithm(class, family) on the
// wire: for every family of every class an algorithm of that class, the
// oracle default for an oracle family (whose rows stay on the client).
TEST(ClassEntries, EveryFamilyWithoutAnAlgorithmGetsADefaultOfItsClass) {
  for (const ProblemClassEntry& e : ProblemClasses()) {
    for (const std::string& family : e.family_names()) {
      const std::string chosen(DefaultAlgorithm(e.id, family));
      EXPECT_EQ(chosen, IsOracleFamily(family) ? e.oracle_default_algorithm : e.default_algorithm)
          << family;
      const AlgorithmInfo* info = FindAlgorithm(chosen);
      ASSERT_NE(info, nullptr) << family << ": " << chosen;
      EXPECT_EQ(info->problem_class, e.id) << family << ": " << chosen;
      v1::SessionSpec spec;
      spec.mutable_family()->set_name(family);
      absl::StatusOr<SessionConfig> config = ToSessionConfig(spec);
      ASSERT_TRUE(config.ok()) << family << ": " << config.status();
      EXPECT_EQ(config->algorithm, chosen) << family;
    }
  }
}

// The contract's comment on SessionSpec.algorithm (proto/f2obo/v1/
// spec.proto) marks exactly each class's default (and the oracle
// family's where it differs) as "(default", so a switch of the default in
// core/problem_registry.cc cannot leave the proto naming the old one.
TEST(ClassEntries, TheProtoCommentNamesEachClassDefault) {
  std::ifstream in(F2OBO_PROTO_PATH);
  ASSERT_TRUE(in.good()) << F2OBO_PROTO_PATH;
  std::vector<std::string> comment;
  bool in_spec = false, found = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("message SessionSpec {", 0) == 0) in_spec = true;
    if (!in_spec) continue;
    const size_t code = line.find_first_not_of(' ');
    if (code != std::string::npos && line.compare(code, 2, "//") == 0) {
      comment.push_back(line.substr(code + 2));
      continue;
    }
    if (line.find("string algorithm = ") != std::string::npos) {
      found = true;
      break;
    }
    comment.clear();
  }
  ASSERT_TRUE(found) << "SessionSpec.algorithm in " << F2OBO_PROTO_PATH;
  std::string text;
  for (const std::string& l : comment) text += l;
  size_t marks = 0;
  for (size_t p = text.find("(default"); p != std::string::npos; p = text.find("(default", p + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, ProblemClasses().size()) << text;
  for (const ProblemClassEntry& e : ProblemClasses()) {
    EXPECT_NE(text.find(std::string("\"") + e.default_algorithm + "\" (default"), std::string::npos)
        << e.name << "'s default " << e.default_algorithm << " in: " << text;
    if (std::string(e.oracle_default_algorithm) != e.default_algorithm) {
      EXPECT_NE(text.find(std::string("\"") + e.oracle_default_algorithm + "\")"),
                std::string::npos)
          << e.name << "'s oracle default " << e.oracle_default_algorithm << " in: " << text;
    }
  }
}

TEST(ClassEntries, EveryClassOfTheCoreHasItsWireEntry) {
  for (const ProblemClassEntry& e : ProblemClasses()) {
    const ClassWire* w = WireOf(e.id);
    ASSERT_NE(w, nullptr) << e.name << " has no entry in class_wire.cc";
    EXPECT_EQ(w->id, e.id);
    EXPECT_TRUE(w->report && w->metrics && w->running && w->info && w->decision) << e.name;
  }
}

TEST(ClassEntries, EveryClassOfTheCoreHasExactlyOnePresentationFoundByItsSessions) {
  EXPECT_EQ(server::presentation::Presentations().size(), ProblemClasses().size());
  for (const ProblemClassEntry& e : ProblemClasses()) {
    const ProblemClass c = e.id;
    int entries = 0;
    for (const server::presentation::ClassPresentation* p : server::presentation::Presentations()) {
      entries += p->id == c ? 1 : 0;
    }
    ASSERT_EQ(entries, 1) << ProblemClassName(c) << " in class_presentation.cc";
    v1::SessionInfo info;
    info.mutable_spec()->set_problem_class(std::string(ProblemClassName(c)));
    const server::presentation::ClassPresentation* p = server::presentation::PresentationOf(info);
    ASSERT_NE(p, nullptr) << ProblemClassName(c);
    EXPECT_EQ(p->id, c);
    EXPECT_TRUE(p->owns && p->exact_converged && p->new_series && p->step_json && p->session_json)
        << ProblemClassName(c);
  }
}

TEST(ClassEntries, EachClassesRoundReportOnTheWireIsPresentedAsThatClass) {
  for (int i = 0; i < kClasses; ++i) {
    const ProblemClass c = static_cast<ProblemClass>(i);
    const StepReport r = ReportOfClass(i, std::make_index_sequence<kClasses>());
    ASSERT_EQ(static_cast<int>(r.detail.index()), i);
    v1::RoundReport wire;
    ToProto(r, &wire);
    EXPECT_EQ(server::presentation::PresentationOf(wire).id, c) << ProblemClassName(c);
  }
}

// The messages that carry a class's own part keep it in their oneof
// problem_class, one member per class: a class added to the core but not
// to the proto has no member to write.
TEST(ClassEntries, EveryPerClassMessageHasOneProblemClassMemberPerClass) {
  for (const google::protobuf::Descriptor* d :
       {v1::RoundReport::descriptor(), v1::ExactMetrics::descriptor(),
        v1::RunningMetrics::descriptor(), v1::SessionInfo::descriptor()}) {
    const google::protobuf::OneofDescriptor* o = d->FindOneofByName("problem_class");
    ASSERT_NE(o, nullptr) << d->full_name();
    EXPECT_EQ(o->field_count(), kClasses) << d->full_name();
  }
}

// Each class's wire entry writes its own member of the oneof (one per
// class, none shared): a report, exact metrics and running sums say their
// class.
TEST(ClassEntries, EachClassWritesItsOwnProblemClassMember) {
  std::vector<int> report_members, metrics_members, running_members;
  for (int i = 0; i < kClasses; ++i) {
    const ProblemClass c = static_cast<ProblemClass>(i);
    v1::RoundReport report;
    ToProto(ReportOfClass(i, std::make_index_sequence<kClasses>()), &report);
    v1::ExactMetrics exact;
    ToProto(MetricsOfClass(i, std::make_index_sequence<kClasses>()), RunningMetrics{}, &exact);
    ASSERT_NE(report.problem_class_case(), v1::RoundReport::PROBLEM_CLASS_NOT_SET)
        << ProblemClassName(c);
    ASSERT_NE(exact.problem_class_case(), v1::ExactMetrics::PROBLEM_CLASS_NOT_SET)
        << ProblemClassName(c);
    ASSERT_NE(exact.running().problem_class_case(), v1::RunningMetrics::PROBLEM_CLASS_NOT_SET)
        << ProblemClassName(c);
    report_members.push_back(report.problem_class_case());
    metrics_members.push_back(exact.problem_class_case());
    running_members.push_back(exact.running().problem_class_case());
  }
  for (std::vector<int>* members : {&report_members, &metrics_members, &running_members}) {
    std::sort(members->begin(), members->end());
    EXPECT_EQ(std::adjacent_find(members->begin(), members->end()), members->end());
  }
}

TEST(ClassEntries, AnUnknownClassNameHasNoPresentationRatherThanTheBilevelOne) {
  v1::SessionInfo info;
  info.mutable_spec()->set_problem_class("no_such_class");
  EXPECT_EQ(server::presentation::PresentationOf(info), nullptr);
}

}  // namespace
}  // namespace f2obo
