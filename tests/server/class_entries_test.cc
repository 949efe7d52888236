// Every problem class has its entry in each layer's per-class table: the
// core's (core/problem_registry.cc), the wire's (proto/f2obo/v1/
// class_wire.cc) and the presentation's (server/presentation/
// class_presentation.cc).  The compiler counts the classes: each has one
// alternative of ClassReport and of ClassMetrics, at its enum value (the
// wire converts by that index).  A class added there but forgotten in a
// table fails here, instead of being served with another class's code.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/class_metrics.h"
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

// A round report of class `i` (the alternative at index i).
template <std::size_t... I>
StepReport ReportOfClass(std::size_t i, std::index_sequence<I...>) {
  StepReport r;
  ((i == I ? (void)r.detail.emplace<I>() : (void)0), ...);
  return r;
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
  }
}

TEST(ClassEntries, EveryClassHasItsWireEntry) {
  for (int i = 0; i < kClasses; ++i) {
    const ProblemClass c = static_cast<ProblemClass>(i);
    const ClassWire* w = WireOf(c);
    ASSERT_NE(w, nullptr) << ProblemClassName(c) << " has no entry in class_wire.cc";
    EXPECT_EQ(w->id, c);
    EXPECT_TRUE(w->report && w->metrics && w->running && w->info && w->decision)
        << ProblemClassName(c);
  }
}

TEST(ClassEntries, EveryClassHasExactlyOnePresentationFoundByItsSessions) {
  EXPECT_EQ(static_cast<int>(server::presentation::Presentations().size()), kClasses);
  for (int i = 0; i < kClasses; ++i) {
    const ProblemClass c = static_cast<ProblemClass>(i);
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

TEST(ClassEntries, AnUnknownClassNameHasNoPresentationRatherThanTheBilevelOne) {
  v1::SessionInfo info;
  info.mutable_spec()->set_problem_class("no_such_class");
  EXPECT_EQ(server::presentation::PresentationOf(info), nullptr);
}

}  // namespace
}  // namespace f2obo
