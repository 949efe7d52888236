#include "server/oracle_stream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/decode_traits.h"

namespace f2obo::server {
namespace {

// Copies `bytes` (little-endian float64, or float32 when `float32`: the
// x86 and aarch64 layouts) into `out`, which has `n` entries, widening
// floats exactly; INVALID_ARGUMENT naming `field` (and, for a number that
// is not finite, `what` it is) unless there are exactly n of them, all
// finite.
absl::Status CopyVector(const std::string& bytes, int n, bool float32, const std::string& field,
                        const std::string& what, Vector* out) {
  const size_t size = float32 ? sizeof(float) : sizeof(double);
  const size_t want = static_cast<size_t>(n) * size;
  if (bytes.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", bytes.size(), " bytes, expected ",
                                                   n, float32 ? " float32 (" : " float64 (", want,
                                                   " bytes)"));
  }
  // One pass: widen (or copy) and test finiteness together (a NaN or
  // inf fails |v| <= max; the loop vectorizes, the error's entry is
  // looked for only when there is one).
  double* o = out->data();
  bool finite = true;
  constexpr double kMax = std::numeric_limits<double>::max();
  if (float32) {
    const char* in = bytes.data();
    for (int i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, in + static_cast<size_t>(i) * sizeof(float), sizeof(float));
      o[i] = static_cast<double>(v);
      finite &= std::abs(o[i]) <= kMax;
    }
  } else {
    std::memcpy(o, bytes.data(), want);
    for (int i = 0; i < n; ++i) finite &= std::abs(o[i]) <= kMax;
  }
  if (finite) return absl::OkStatus();
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(o[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: ", o[i], " is not finite (", what, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

StreamOracle::StreamOracle(grpc::ServerContext* ctx, OracleStream* stream, OracleWatchdog* watchdog,
                           const RoundStopFlags* stops,
                           std::shared_ptr<const std::atomic<bool>> session_stop,
                           double budget_seconds, Shape shape, OraclePoints* points)
    : ctx_(ctx),
      stream_(stream),
      watchdog_(watchdog),
      session_stop_(std::move(session_stop)),
      control_(ctx, stops, budget_seconds),
      shape_(shape),
      points_(points) {
  control_.set_session_stop(session_stop_.get());
}

absl::Status StreamOracle::EvaluateGroups(absl::Span<OracleQuery> queries) {
  // Groups of queries whose request (new points, rows) and answers each
  // fit a message: usually all of them.
  const int64_t budget = shape_.max_message_bytes - kOracleMessageSlack;
  const auto vector_bytes = [](size_t n) { return static_cast<int64_t>(8 * n + 16); };
  const int64_t answer_entry = shape_.float32 ? 4 : 8;  // the answers' number size
  const auto answer_bytes_of = [&](int n) { return answer_entry * n + 16; };
  // A large model's answers come one y-sized vector a message: the answer
  // in flight (gRPC's slices and the decoded message, alive together while
  // it is parsed) is then two vectors, not two per gradient of the request
  // (three gradients in an F2OBO inner iteration under the default
  // schedule: 6 y of a step's peak, docs/oracle-protocol.md "Memory").
  // The price, a round trip per further gradient, is small beside the
  // client's evaluation of such a model.
  const int64_t answer_budget =
      8 * static_cast<int64_t>(shape_.y_dim) >= kOracleOneAnswerBytes
          ? std::min(budget, answer_bytes_of(shape_.y_dim) + answer_bytes_of(shape_.x_dim) + 64)
          : budget;
  size_t begin = 0;
  std::vector<const double*> fresh;  // new points of the group (by address)
  while (begin < queries.size()) {
    int64_t request_bytes = 0, answer_bytes = 0;
    fresh.clear();
    size_t end = begin;
    for (; end < queries.size(); ++end) {
      const OracleQuery& q = queries[end];
      int64_t request = 64 + 10 * static_cast<int64_t>(q.rows.idx == nullptr ? 0 : q.rows.n);
      size_t added = 0;
      for (const absl::Span<const double> p : {q.x, q.y}) {
        if (p.empty() || std::find(fresh.begin(), fresh.end(), p.data()) != fresh.end() ||
            points_->Held(p) != 0) {
          continue;
        }
        fresh.push_back(p.data());
        ++added;
        const bool by_recipe = !terms_.empty() && p.size() == static_cast<size_t>(shape_.y_dim);
        request += by_recipe ? 64 : vector_bytes(p.size());
      }
      const int64_t answer = 32 + (q.grad_x != nullptr ? answer_bytes_of(shape_.x_dim) : 0) +
                             (q.grad_y != nullptr ? answer_bytes_of(shape_.y_dim) : 0);
      if (end > begin &&
          (request_bytes + request > budget || answer_bytes + answer > answer_budget)) {
        fresh.resize(fresh.size() - added);
        break;
      }
      request_bytes += request;
      answer_bytes += answer;
    }
    if (std::max(request_bytes, answer_bytes) > budget) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a query needs a message of about ", std::max(request_bytes, answer_bytes),
                       " bytes, beyond the server's message limit of ", shape_.max_message_bytes,
                       " bytes (--max_message_bytes; raise it on the server and on its clients)"));
    }
    if (absl::Status s = Ask(queries.subspan(begin, end - begin), end == queries.size()); !s.ok()) {
      return s;
    }
    begin = end;
  }
  return absl::OkStatus();
}

absl::Status StreamOracle::Evaluate(absl::Span<OracleQuery> queries) {
  if (stream_ == nullptr) {
    return absl::FailedPreconditionError("the oracle was asked after its step ended");
  }
  if (!shape_.recipes) {
    for (const OracleQuery& q : queries) {
      if (q.fused) return EvaluateExpanded(queries);
    }
    return EvaluateGroups(queries);
  }
  // The last Evaluate's kept answers: terms of this one's recipes while
  // unchanged (the round has not written them since), then forgotten.
  terms_.clear();
  term_entries_.clear();
  stale_.clear();
  for (const OraclePoints::Kept& k : points_->kept) {
    stale_.push_back(k.id);
    if (k.values != nullptr && VectorHash(*k.values) == k.hash) {
      terms_.push_back(k);
      term_entries_.push_back(LargestEntry(
          absl::Span<const double>(k.values->data(), static_cast<size_t>(k.values->size()))));
    }
  }
  points_->kept.clear();
  const absl::Status s = EvaluateGroups(queries);
  terms_.clear();
  term_entries_.clear();
  return s;
}

absl::Status StreamOracle::EvaluateExpanded(absl::Span<OracleQuery> queries) {
  std::vector<OracleQuery> asked;
  asked.reserve(2 * queries.size());
  std::vector<Vector> g(queries.size(), Vector());  // never reallocated: pointers into it
  for (const OracleQuery& q : queries) {
    asked.push_back(q);
    asked.back().fused = false;
  }
  for (size_t i = 0; i < queries.size(); ++i) {
    const OracleQuery& q = queries[i];
    if (!q.fused) continue;
    g[i].resize(shape_.y_dim);
    const auto same = [&](const OracleQuery& o) {
      return o.function == OracleQuery::Function::kG && o.grad_y == nullptr &&
             o.x.data() == q.x.data() && o.y.data() == q.y.data() && o.task == q.task &&
             o.rows.idx == q.g_rows.idx && o.rows.n == q.g_rows.n;
    };
    auto it = std::find_if(asked.begin(), asked.end(), same);
    if (it != asked.end()) {
      it->grad_y = &g[i];
      continue;
    }
    OracleQuery gq;
    gq.function = OracleQuery::Function::kG;
    gq.x = q.x;
    gq.y = q.y;
    gq.rows = q.g_rows;
    gq.task = q.task;
    gq.grad_y = &g[i];
    asked.push_back(gq);
  }
  if (absl::Status s = EvaluateGroups(absl::MakeSpan(asked)); !s.ok()) return s;
  for (size_t i = 0; i < queries.size(); ++i) {
    // As the core adds them (BilevelFamily::InnerIterationDirection).
    if (queries[i].fused) *queries[i].grad_y += queries[i].fuse_g * g[i];
  }
  return absl::OkStatus();
}

absl::Status StreamOracle::Ask(absl::Span<OracleQuery> queries, bool last) {
  in_request_.clear();
  // The held points this request names first, so that adding its new
  // points evicts none of them.
  for (const OracleQuery& q : queries) {
    for (const absl::Span<const double> p : {q.x, q.y}) {
      if (const uint64_t id = p.empty() ? 0 : points_->Held(p); id != 0 && !InRequest(id)) {
        in_request_.push_back(id);
      }
    }
  }
  keep_.clear();
  v1::OracleServerMessage out;
  v1::OracleRequest* request = out.mutable_request();
  request->set_float32(shape_.float32);
  const uint64_t first = points_->next_id;
  points_->next_id += queries.size();
  for (size_t i = 0; i < queries.size(); ++i) {
    const OracleQuery& q = queries[i];
    v1::OracleQuery* m = request->add_queries();
    m->set_id(first + i);
    m->set_function(q.function == OracleQuery::Function::kF ? v1::OracleQuery::F
                                                            : v1::OracleQuery::G);
    m->set_x(PointId(q.x, request));
    // No y in the simple bilevel class: point id 0.
    if (!q.y.empty()) m->set_y(PointId(q.y, request));
    if (q.task >= 0) m->set_task(q.task);
    m->set_value(q.value != nullptr);
    m->set_grad_x(q.grad_x != nullptr);
    m->set_grad_y(q.grad_y != nullptr && !q.fused);
    if (q.rows.idx == nullptr) {
      m->set_all_rows(true);
    } else {
      m->mutable_rows()->Add(q.rows.idx, q.rows.idx + q.rows.n);
    }
    if (q.fused) {  // (recipe clients only: Evaluate expands them for the others)
      m->set_fused_y(true);
      m->set_fuse_g(q.fuse_g);
      if (q.g_rows.idx == nullptr) {
        m->set_g_all_rows(true);
      } else {
        m->mutable_g_rows()->Add(q.g_rows.idx, q.g_rows.idx + q.g_rows.n);
      }
    }
    if (shape_.recipes && q.grad_y != nullptr) {
      const uint64_t keep = points_->next_id++;
      m->set_keep_y(keep);
      keep_.emplace_back(keep, q.grad_y);
    }
  }
  Evict(request);
  for (const uint64_t id : points_->forget) request->add_forget(id);
  points_->forget.clear();
  if (last) {
    for (const uint64_t id : stale_) request->add_forget(id);
    stale_.clear();
  }
  if (const int64_t bytes = static_cast<int64_t>(out.ByteSizeLong());
      bytes > shape_.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a request for the client's values and derivatives is ", bytes,
        " bytes (its points x, y), beyond this server's --max_message_bytes = ",
        shape_.max_message_bytes,
        "; round discarded, session unchanged: raise --max_message_bytes on the server and the "
        "client's max_message_bytes to at least that"));
  }
  if (!stream_->Write(out)) {
    return absl::UnavailableError("the client went away (a request could not be written)");
  }
  v1::OracleAnswers answers;
  if (absl::Status s = Receive(&answers, first, queries.size()); !s.ok()) return s;
  if (absl::Status s = Fill(answers, first, queries); !s.ok()) return s;
  for (const auto& [id, values] : keep_) points_->kept.push_back({id, values, VectorHash(*values)});
  keep_.clear();
  return absl::OkStatus();
}

absl::Status EndedRead(std::chrono::system_clock::time_point now,
                       std::chrono::system_clock::time_point deadline, bool cancelled,
                       const std::string& asked) {
  // gRPC cancels a call whose deadline passed; say which of the two it was.
  // A read that ended uncancelled is the client's own close, whenever.
  if (now >= deadline || (cancelled && deadline - now <= kDeadlineTransit)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the client's deadline passed while the round waited for its answers to ", asked));
  }
  if (cancelled) {
    return absl::CancelledError(absl::StrCat(
        "the client cancelled the call while the round waited for its answers to ", asked));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the client closed the stream while the round waited for its answers to ", asked));
}

absl::Status StreamOracle::Receive(v1::OracleAnswers* answers, uint64_t first, size_t count) {
  const std::string asked = absl::StrCat("queries ", first, "..", first + count - 1);
  v1::OracleClientMessage in;
  watchdog_->Arm(&control_);
  const absl::StatusOr<bool> read = v1::ReadMessage(stream_, &in);
  if (absl::Status fired = watchdog_->Disarm(); !fired.ok()) return fired;
  if (!read.ok()) return read.status();  // a message that could not be decoded
  if (!*read) {
    return EndedRead(std::chrono::system_clock::now(), ctx_->deadline(), ctx_->IsCancelled(),
                     asked);
  }
  if (!in.has_answers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected the answers to ", asked,
                     ", got another message (open: a step is already running on this stream)"));
  }
  *answers = std::move(*in.mutable_answers());
  return absl::OkStatus();
}

absl::Status StreamOracle::Fill(const v1::OracleAnswers& answers, uint64_t first,
                                absl::Span<OracleQuery> queries) const {
  const size_t n = queries.size();
  // (Session::Prepare says which step.)
  const std::string prefix = "answers";
  if (static_cast<size_t>(answers.answers_size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, ": ", answers.answers_size(), " answers to a request of ", n,
                     " queries (ids ", first, "..", first + n - 1, "); answer each once"));
  }
  std::vector<bool> seen(n, false);
  for (int i = 0; i < answers.answers_size(); ++i) {
    const v1::OracleAnswer& a = answers.answers(i);
    const std::string field = absl::StrCat(prefix, "[", i, "]");
    const uint64_t k = a.query() - first;
    if (a.query() < first || k >= n) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".query: ", a.query(),
                                                     " was not asked (this request asked ids ",
                                                     first, "..", first + n - 1, ")"));
    }
    if (seen[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".query: ", a.query(), " is answered twice"));
    }
    seen[k] = true;
    OracleQuery& q = queries[k];
    // What the client was asked, for its errors: "g's gradient in y (query 7)".
    const char* fn = q.function == OracleQuery::Function::kF ? "f" : "g";
    const auto what = [&](const char* of) {
      return absl::StrCat(fn, "'s ", of, " (query ", a.query(), ")");
    };
    if (q.value != nullptr) {
      if (!std::isfinite(a.value())) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".value: ", a.value(), " is not finite (", what("value"), ")"));
      }
      *q.value = a.value();
    }
    // A fused query's answer is fused_y (a recipe client's; the others'
    // fused queries were expanded).  The stream's wire says which of each
    // pair of fields carries the numbers: the other one stays empty.
    const bool f32 = shape_.float32;
    const std::string* fields[2][2] = {
        {&a.grad_x(), &a.grad_x_f32()},
        {q.fused ? &a.fused_y() : &a.grad_y(), q.fused ? &a.fused_y_f32() : &a.grad_y_f32()}};
    const char* names[2][2] = {
        {".grad_x", ".grad_x_f32"},
        {q.fused ? ".fused_y" : ".grad_y", q.fused ? ".fused_y_f32" : ".grad_y_f32"}};
    const std::string* other_y[2] = {q.fused ? &a.grad_y() : &a.fused_y(),
                                     q.fused ? &a.grad_y_f32() : &a.fused_y_f32()};
    const char* other_names[2] = {q.fused ? ".grad_y" : ".fused_y",
                                  q.fused ? ".grad_y_f32" : ".fused_y_f32"};
    for (int w = 0; w < 2; ++w) {
      if (!other_y[w]->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, other_names[w], ": not asked (query ", a.query(), ")"));
      }
    }
    Vector* const grads[2] = {q.grad_x, q.grad_y};
    const int dims[2] = {shape_.x_dim, shape_.y_dim};
    const char* ofs[2] = {"gradient in x",
                          q.fused ? "gradient in y of f + fuse_g g" : "gradient in y"};
    for (int j = 0; j < 2; ++j) {
      if (grads[j] == nullptr) {
        for (int w = 0; w < 2; ++w) {
          if (!fields[j][w]->empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat(field, names[j][w], ": not asked (query ", a.query(), ")"));
          }
        }
        continue;
      }
      if (!fields[j][!f32]->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, names[j][!f32], ": this stream's answers are ",
                         f32 ? "float32" : "float64", " (open.float32 = ", f32 ? "true" : "false",
                         "): send ", names[j][f32] + 1, " (query ", a.query(), ")"));
      }
      if (absl::Status s = CopyVector(*fields[j][f32], dims[j], f32,
                                      absl::StrCat(field, names[j][f32]), what(ofs[j]), grads[j]);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo::server
