#include "server/oracle_stream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/decode_traits.h"

namespace f2obo::server {
namespace {

// How often a blocked Read's stop conditions are looked at, and how long a
// stopped client may take to end the call itself before it is cancelled.
constexpr auto kPoll = std::chrono::milliseconds(10);
constexpr auto kGrace = std::chrono::seconds(1);

// Copies `bytes` (little-endian float64, the x86 and aarch64 layout) into
// `out`, which has `n` entries; INVALID_ARGUMENT naming `field` (and, for
// a number that is not finite, `what` it is) unless there are exactly n of
// them, all finite.
absl::Status CopyVector(const std::string& bytes, int n, const std::string& field,
                        const std::string& what, Vector* out) {
  const size_t want = static_cast<size_t>(n) * sizeof(double);
  if (bytes.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", bytes.size(), " bytes, expected ",
                                                   n, " float64 (", want, " bytes)"));
  }
  std::memcpy(out->data(), bytes.data(), want);
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite((*out)[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: ", (*out)[i], " is not finite (", what, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

OracleWatchdog::OracleWatchdog(grpc::ServerContext* ctx, OracleStream* stream)
    : ctx_(ctx), stream_(stream), thread_([this] { Run(); }) {}

OracleWatchdog::~OracleWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    quit_ = true;
  }
  thread_.join();
}

void OracleWatchdog::Arm(CallRoundControl* control) {
  absl::MutexLock lock(&mu_);
  armed_ = control;
  fired_ = absl::OkStatus();
}

absl::Status OracleWatchdog::Disarm() {
  absl::MutexLock lock(&mu_);
  armed_ = nullptr;
  return fired_;
}

void OracleWatchdog::Run() {
  absl::MutexLock lock(&mu_);
  const auto armed_or_quit = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return quit_ || (armed_ != nullptr && fired_.ok());
  };
  const auto disarmed_or_quit = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return quit_ || armed_ == nullptr || !fired_.ok();
  };
  while (!quit_) {
    if (armed_ == nullptr || !fired_.ok()) {
      mu_.Await(absl::Condition(&armed_or_quit));
      continue;
    }
    mu_.AwaitWithTimeout(absl::Condition(&disarmed_or_quit), absl::FromChrono(kPoll));
    if (quit_ || armed_ == nullptr || !fired_.ok()) continue;
    // The handler thread is blocked in Read: only this thread uses armed_.
    absl::Status stop = armed_->CheckNow();
    if (stop.ok()) continue;
    fired_ = absl::Status(stop.code(), absl::StrCat(stop.message(),
                                                    " while waiting for the client's answers; "
                                                    "round discarded, session unchanged"));
    Fire();
  }
}

void OracleWatchdog::Fire() {
  v1::OracleServerMessage error;
  error.mutable_error()->set_code(static_cast<int>(fired_.code()));
  error.mutable_error()->set_message(std::string(fired_.message()));
  writing_ = true;
  mu_.Unlock();
  // A client that reads nothing any more can block the write: cancel then.
  std::thread guard([this] {
    absl::MutexLock l(&mu_);
    const auto written = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&written), absl::FromChrono(kGrace))) {
      ctx_->TryCancel();
    }
  });
  stream_->Write(error);
  mu_.Lock();
  writing_ = false;
  mu_.Unlock();
  guard.join();
  mu_.Lock();
  // The client may end the call itself once it read why; else cut it off.
  const auto ended = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return armed_ == nullptr || quit_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ended), absl::FromChrono(kGrace))) {
    ctx_->TryCancel();
  }
}

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

uint64_t OraclePoints::Held(absl::Span<const double> values) const {
  for (const auto& [id, v] : held) {
    if (v.size() == values.size() &&
        std::memcmp(v.data(), values.data(), values.size() * sizeof(double)) == 0) {
      return id;
    }
  }
  return 0;
}

bool StreamOracle::InRequest(uint64_t id) const {
  return std::find(in_request_.begin(), in_request_.end(), id) != in_request_.end();
}

uint64_t StreamOracle::PointId(absl::Span<const double> values, v1::OracleRequest* request) {
  const size_t bytes = values.size() * sizeof(double);
  auto& held = points_->held;
  for (auto it = held.begin(); it != held.end(); ++it) {
    // Different points differ in their first entries: memcmp stops there.
    if (it->second.size() == values.size() &&
        std::memcmp(it->second.data(), values.data(), bytes) == 0) {
      const uint64_t id = it->first;
      // Most recently used last.
      if (std::next(it) != held.end()) {
        std::pair<uint64_t, std::vector<double>> moved = std::move(*it);
        held.erase(it);
        held.push_back(std::move(moved));
      }
      if (!InRequest(id)) in_request_.push_back(id);
      return id;
    }
  }
  const uint64_t id = points_->next_id++;
  v1::OraclePoint* p = request->add_points();
  p->set_id(id);
  p->set_values(values.data(), bytes);
  held.emplace_back(id, std::vector<double>(values.begin(), values.end()));
  points_->held_bytes += bytes;
  in_request_.push_back(id);
  // Two points of y's size besides the small ones: the round's y and z
  // (an F2OBO request asks at y_k and z_k; the hypergradient and `done`
  // name the last of them), never one this request names.
  const size_t budget =
      2 * sizeof(double) * static_cast<size_t>(std::max(shape_.x_dim, shape_.y_dim)) +
      (size_t{1} << 20);
  while ((held.size() > OraclePoints::kCapacity || points_->held_bytes > budget) &&
         !InRequest(held.front().first)) {
    request->add_forget(held.front().first);
    points_->held_bytes -= held.front().second.size() * sizeof(double);
    held.pop_front();
  }
  return id;
}

absl::Status StreamOracle::Evaluate(absl::Span<OracleQuery> queries) {
  if (stream_ == nullptr) {
    return absl::FailedPreconditionError("the oracle was asked after its step ended");
  }
  // Groups of queries whose request (new points, rows) and answers each
  // fit a message: usually all of them.
  const int64_t budget = shape_.max_message_bytes - kOracleMessageSlack;
  const auto vector_bytes = [](size_t n) { return static_cast<int64_t>(8 * n + 16); };
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
        request += vector_bytes(p.size());
      }
      const int64_t answer = 32 + (q.grad_x != nullptr ? vector_bytes(shape_.x_dim) : 0) +
                             (q.grad_y != nullptr ? vector_bytes(shape_.y_dim) : 0);
      if (end > begin && (request_bytes + request > budget || answer_bytes + answer > budget)) {
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
    if (absl::Status s = Ask(queries.subspan(begin, end - begin)); !s.ok()) return s;
    begin = end;
  }
  return absl::OkStatus();
}

absl::Status StreamOracle::Ask(absl::Span<OracleQuery> queries) {
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
  v1::OracleServerMessage out;
  v1::OracleRequest* request = out.mutable_request();
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
    m->set_grad_y(q.grad_y != nullptr);
    if (q.rows.idx == nullptr) {
      m->set_all_rows(true);
    } else {
      m->mutable_rows()->Add(q.rows.idx, q.rows.idx + q.rows.n);
    }
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
  return Fill(answers, first, queries);
}

absl::Status StreamOracle::Receive(v1::OracleAnswers* answers, uint64_t first, size_t count) {
  const std::string asked = absl::StrCat("queries ", first, "..", first + count - 1);
  v1::OracleClientMessage in;
  watchdog_->Arm(&control_);
  const absl::StatusOr<bool> read = v1::ReadMessage(stream_, &in);
  if (absl::Status fired = watchdog_->Disarm(); !fired.ok()) return fired;
  if (!read.ok()) return read.status();  // a message that could not be decoded
  if (!*read) {
    if (ctx_->IsCancelled()) {
      return absl::CancelledError(absl::StrCat(
          "the client cancelled the call while the round waited for its answers to ", asked));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "the client closed the stream while the round waited for its answers to ", asked));
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
    const std::pair<Vector*, const std::string*> grads[2] = {{q.grad_x, &a.grad_x()},
                                                             {q.grad_y, &a.grad_y()}};
    const int dims[2] = {shape_.x_dim, shape_.y_dim};
    const char* names[2] = {".grad_x", ".grad_y"};
    const char* ofs[2] = {"gradient in x", "gradient in y"};
    for (int j = 0; j < 2; ++j) {
      if (grads[j].first == nullptr) {
        if (!grads[j].second->empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, names[j], ": not asked (query ", a.query(), ")"));
        }
        continue;
      }
      if (absl::Status s = CopyVector(*grads[j].second, dims[j], absl::StrCat(field, names[j]),
                                      what(ofs[j]), grads[j].first);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo::server
