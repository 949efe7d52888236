#include "tests/server/oracle_client.h"

#include <chrono>
#include <cstring>

#include "core/family_registry.h"
#include "f2obo/v1/convert.h"

namespace f2obo::testing {
namespace {

std::string Bytes(const Vector& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

}  // namespace

FamilyAnswerer::FamilyAnswerer(const FamilyCase& f) : case_(f) {
  family_ = *CreateFamily(ToSessionConfig(SpecFor(f, "f2obo", 1))->family);
}

void FamilyAnswerer::SetStep(int64_t t) {
  const v1::StepRequest req = RequestFor(case_, "", t);
  data_ = StepData{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")};
  family_->Prepare(data_);
}

v1::OracleAnswers FamilyAnswerer::Answer(const v1::OracleRequest& r,
                                         std::map<uint64_t, Vector>* points) {
  for (const v1::OraclePoint& p : r.points()) {
    Vector v(p.values().size() / sizeof(double));
    std::memcpy(v.data(), p.values().data(), p.values().size());
    (*points)[p.id()] = std::move(v);
  }
  v1::OracleAnswers out;
  std::vector<int> rows;
  for (const v1::OracleQuery& q : r.queries()) {
    const Vector& x = points->at(q.x());
    const Vector& y = points->at(q.y());
    const bool is_f = q.function() == v1::OracleQuery::F;
    BatchView view = BatchView::All(is_f ? data_.upper : data_.inner);
    rows.assign(q.rows().begin(), q.rows().end());
    if (!q.all_rows()) view.rows = RowSet{rows.data(), static_cast<int>(rows.size())};
    Vector gx(family_->x_dim()), gy(family_->y_dim());
    const double value =
        is_f ? family_->F(x, y, view, q.grad_x() ? &gx : nullptr, q.grad_y() ? &gy : nullptr)
             : family_->G(x, y, view, q.grad_x() ? &gx : nullptr, q.grad_y() ? &gy : nullptr);
    v1::OracleAnswer* a = out.add_answers();
    a->set_query(q.id());
    if (q.value()) a->set_value(value);
    if (q.grad_x()) a->set_grad_x(Bytes(gx));
    if (q.grad_y()) a->set_grad_y(Bytes(gy));
  }
  for (uint64_t id : r.forget()) points->erase(id);
  return out;
}

OracleClient::OracleClient(v1::F2obo::Stub* stub, double timeout_seconds) {
  ctx_.set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  stream_ = stub->OracleSteps(&ctx_);
}

OracleOutcome OracleClient::Step(const std::string& session, int64_t t, FamilyAnswerer* answerer,
                                 const Tamper& tamper) {
  OracleOutcome out;
  answerer->SetStep(t);
  v1::OracleClientMessage open;
  open.mutable_open()->set_session_id(session);
  open.mutable_open()->set_t(t);
  open.mutable_open()->set_upper_rows(answerer->upper_rows());
  open.mutable_open()->set_inner_rows(answerer->inner_rows());
  stream_->Write(open);
  v1::OracleServerMessage in;
  while (stream_->Read(&in)) {
    if (in.has_done()) {
      out.reply = in.done();
      return out;
    }
    if (in.has_error()) {
      out.error = in.error();
      ctx_.TryCancel();  // as a client library does once it read why
      break;
    }
    v1::OracleAnswers answers = answerer->Answer(in.request(), &points_);
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
