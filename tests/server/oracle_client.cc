#include "tests/server/oracle_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "client/session_routing.h"
#include "core/family_registry.h"
#include "core/simple/simple_registries.h"
#include "f2obo/v1/convert.h"

namespace f2obo::testing {
namespace {

std::string Bytes(const Vector& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

const Batch& Of(const StepData& data, const v1::OracleQuery& q) {
  return q.function() == v1::OracleQuery::F ? data.upper : data.inner;
}

// RowSet{nullptr, -1} (Answer's) stands for every row of the batch.
BatchView ViewOf(const Batch& b, const RowSet& rows) {
  return rows.n < 0 ? BatchView::All(b) : BatchView{&b, rows};
}

}  // namespace

v1::OracleAnswers Answerer::Answer(const v1::OracleRequest& r, std::map<uint64_t, Vector>* points) {
  for (const v1::OraclePoint& p : r.points()) {
    Vector v(p.values().size() / sizeof(double));
    std::memcpy(v.data(), p.values().data(), p.values().size());
    (*points)[p.id()] = std::move(v);
  }
  // Recipes: base + sum coef * point, each product rounded, then each sum
  // (this file is compiled without fused multiply-adds, as numpy rounds).
  for (const v1::OraclePointRecipe& rc : r.recipes()) {
    Vector v = points->at(rc.base());
    for (const v1::OracleRecipeTerm& term : rc.terms()) {
      const Vector& a = points->at(term.point());
      for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = v[i] + term.coef() * a[i];
    }
    (*points)[rc.id()] = std::move(v);
  }
  v1::OracleAnswers out;
  std::vector<int> rows;
  for (const v1::OracleQuery& q : r.queries()) {
    const Vector& x = points->at(q.x());
    const Vector* y = q.y() != 0 ? &points->at(q.y()) : nullptr;
    rows.assign(q.rows().begin(), q.rows().end());
    const RowSet set =
        q.all_rows() ? RowSet{nullptr, -1} : RowSet{rows.data(), static_cast<int>(rows.size())};
    Vector gx(x_dim()), gy(y_dim());
    const bool want_gy = q.grad_y() || q.fused_y();
    const double value =
        Evaluate(q, x, y, set, q.grad_x() ? &gx : nullptr, want_gy ? &gy : nullptr);
    if (q.fused_y()) {  // + fuse_g grad_y g on the inner batch's g_rows
      v1::OracleQuery g = q;
      g.set_function(v1::OracleQuery::G);
      std::vector<int> g_rows(q.g_rows().begin(), q.g_rows().end());
      const RowSet g_set = q.g_all_rows()
                               ? RowSet{nullptr, -1}
                               : RowSet{g_rows.data(), static_cast<int>(g_rows.size())};
      Vector gg(y_dim());
      Evaluate(g, x, y, g_set, nullptr, &gg);
      for (Eigen::Index i = 0; i < gy.size(); ++i) gy[i] = gy[i] + q.fuse_g() * gg[i];
    }
    v1::OracleAnswer* a = out.add_answers();
    a->set_query(q.id());
    if (q.value()) a->set_value(value);
    if (q.grad_x()) a->set_grad_x(Bytes(gx));
    if (q.grad_y()) a->set_grad_y(Bytes(gy));
    if (q.fused_y()) a->set_fused_y(Bytes(gy));
    if (q.keep_y() != 0) (*points)[q.keep_y()] = gy;
  }
  for (uint64_t id : r.forget()) points->erase(id);
  return out;
}

FamilyAnswerer::FamilyAnswerer(const FamilyCase& f) : case_(f) {
  family_ = *CreateFamily(ToSessionConfig(SpecFor(f, "f2obo", 1))->family);
}

void FamilyAnswerer::SetStep(int64_t t) {
  const v1::StepRequest req = RequestFor(case_, "", t);
  data_ = StepData{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")};
  family_->Prepare(data_);
}

void FamilyAnswerer::Open(v1::OracleStepOpen* open) const {
  open->set_upper_rows(data_.upper.rows());
  open->set_inner_rows(data_.inner.rows());
}

double FamilyAnswerer::Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y,
                                const RowSet& rows, Vector* gx, Vector* gy) {
  const BatchView view = ViewOf(Of(data_, q), rows);
  return q.function() == v1::OracleQuery::F ? family_->F(x, *y, view, gx, gy)
                                            : family_->G(x, *y, view, gx, gy);
}

TaskAnswerer::TaskAnswerer(const FamilyConfig& config, std::function<StepData(int64_t)> steps)
    : family_(*CreateMultitaskFamily(config)), steps_(std::move(steps)) {}

void TaskAnswerer::SetStep(int64_t t) { data_ = steps_(t); }

void TaskAnswerer::Open(v1::OracleStepOpen* open) const {
  for (const TaskData& td : data_.tasks) {
    v1::OracleTask* task = open->add_tasks();
    task->set_task(td.task);
    task->set_upper_rows(td.data.upper.rows());
    task->set_inner_rows(td.data.inner.rows());
    task->set_probability(td.probability);
  }
}

double TaskAnswerer::Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y,
                              const RowSet& rows, Vector* gx, Vector* gy) {
  for (const TaskData& td : data_.tasks) {
    if (td.task != q.task()) continue;
    Family& f = family_->Task(td.task, td.data);
    const BatchView view = ViewOf(Of(td.data, q), rows);
    return q.function() == v1::OracleQuery::F ? f.F(x, *y, view, gx, gy) : f.G(x, *y, view, gx, gy);
  }
  ADD_FAILURE() << "query " << q.id() << " names task " << q.task() << ", not in the step";
  return 0.0;
}

SimpleAnswerer::SimpleAnswerer(const FamilyConfig& config, std::function<StepData(int64_t)> steps)
    : family_(*CreateSimpleFamily(config)), steps_(std::move(steps)) {}

void SimpleAnswerer::SetStep(int64_t t) { data_ = steps_(t); }

void SimpleAnswerer::Open(v1::OracleStepOpen* open) const {
  open->set_upper_rows(data_.upper.rows());
  open->set_inner_rows(data_.inner.rows());
}

double SimpleAnswerer::Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y,
                                const RowSet& rows, Vector* gx, Vector* gy) {
  EXPECT_EQ(y, nullptr) << "a simple bilevel query names a y";
  EXPECT_EQ(gy, nullptr) << "a simple bilevel query asks for grad_y";
  const BatchView view = ViewOf(Of(data_, q), rows);
  return q.function() == v1::OracleQuery::F ? family_->F(x, view, gx) : family_->G(x, view, gx);
}

OracleClient::OracleClient(v1::F2obo::Stub* stub, double timeout_seconds,
                           const std::string& routing_key, bool recipes)
    : recipes_(recipes) {
  ctx_.set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  if (!routing_key.empty()) ctx_.AddMetadata(client::kSessionHeader, routing_key);
  stream_ = stub->OracleSteps(&ctx_);
}

OracleOutcome OracleClient::Step(const std::string& session, int64_t t, Answerer* answerer,
                                 const Tamper& tamper,
                                 const std::function<void(v1::OracleStepOpen*)>& open_hook) {
  OracleOutcome out;
  answerer->SetStep(t);
  v1::OracleClientMessage open;
  open.mutable_open()->set_session_id(session);
  open.mutable_open()->set_t(t);
  answerer->Open(open.mutable_open());
  open.mutable_open()->set_recipes(recipes_);
  if (open_hook != nullptr) open_hook(open.mutable_open());
  stream_->Write(open);
  v1::OracleServerMessage in;
  while (stream_->Read(&in)) {
    if (in.has_done()) {
      out.reply = in.done();
      out.done = in;
      for (const v1::OraclePoint& p : in.y()) {  // a y sent with an id is kept
        if (p.id() == 0 || p.values().empty()) continue;
        Vector v(p.values().size() / sizeof(double));
        std::memcpy(v.data(), p.values().data(), p.values().size());
        points_[p.id()] = std::move(v);
      }
      return out;
    }
    if (in.has_error()) {
      out.error = in.error();
      ctx_.TryCancel();  // as a client library does once it read why
      break;
    }
    out.request_bytes += static_cast<int64_t>(in.ByteSizeLong());
    out.recipes += in.request().recipes_size();
    for (const v1::OraclePoint& p : in.request().points()) {
      if (p.values().size() == sizeof(double) * static_cast<size_t>(answerer->y_dim())) {
        ++out.y_points_sent;
      }
    }
    v1::OracleAnswers answers = answerer->Answer(in.request(), &points_);
    out.answer_bytes += static_cast<int64_t>(answers.ByteSizeLong());
    const int index = out.requests++;
    if (tamper != nullptr && !tamper(index, &answers)) continue;  // silent
    v1::OracleClientMessage msg;
    *msg.mutable_answers() = std::move(answers);
    stream_->Write(msg);
  }
  out.status = Close();
  return out;
}

grpc::Status OracleClient::Close() {
  if (ended_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "closed twice");
  ended_ = true;
  stream_->WritesDone();
  return stream_->Finish();
}

}  // namespace f2obo::testing
