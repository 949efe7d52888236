#include "server/store/postgres/pg_conn.h"

#include <endian.h>
#include <libpq-fe.h>

#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace f2obo::server::pg {

Result::~Result() {
  if (r_ != nullptr) PQclear(r_);
}
int Result::rows() const { return PQntuples(r_); }
int64_t Result::affected() const {
  const char* n = PQcmdTuples(r_);
  return n != nullptr && *n ? std::strtoll(n, nullptr, 10) : 0;
}
bool Result::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
int64_t Result::Int(int row, int col) const {
  uint64_t v = 0;
  if (PQgetlength(r_, row, col) == 8) std::memcpy(&v, PQgetvalue(r_, row, col), 8);
  return static_cast<int64_t>(be64toh(v));
}
absl::string_view Result::Bytes(int row, int col) const {
  return absl::string_view(PQgetvalue(r_, row, col),
                           static_cast<size_t>(PQgetlength(r_, row, col)));
}

absl::StatusCode CodeOfSqlState(absl::string_view s) {
  // Class 08: connection exceptions; 57P01-57P03: the server shutting
  // down or not yet accepting; 53300: too many connections; 25006: a
  // write on a read-only server (a standby, before target_session_attrs
  // finds the primary); 40001/40P01: serialization failure, deadlock.
  if (absl::StartsWith(s, "08") || absl::StartsWith(s, "57P") || s == "53300" || s == "25006" ||
      s == "40001" || s == "40P01") {
    return absl::StatusCode::kUnavailable;
  }
  // 53100 disk full, 53200 out of memory, 54000 a value past a limit.
  if (s == "53100" || s == "53200" || absl::StartsWith(s, "54")) {
    return absl::StatusCode::kResourceExhausted;
  }
  return absl::StatusCode::kInternal;
}

namespace {

// `text` with every password `uri` holds replaced by "****": libpq's
// messages do not repeat a password, except where it echoes a piece of a
// malformed URI.
std::string Scrubbed(std::string text, const std::string& uri) {
  std::vector<std::string> secrets;
  if (size_t scheme = uri.find("://"); scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = uri.find_first_of("/?", start);
    const std::string authority = uri.substr(start, end == std::string::npos ? end : end - start);
    const size_t at = authority.rfind('@');
    const size_t colon = authority.find(':');
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      secrets.push_back(authority.substr(colon + 1, at - colon - 1));
    }
  }
  char* err = nullptr;
  if (PQconninfoOption* opts = PQconninfoParse(uri.c_str(), &err); opts != nullptr) {
    for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
      if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr) {
        secrets.emplace_back(o->val);
      }
    }
    PQconninfoFree(opts);
  }
  if (err != nullptr) PQfreemem(err);
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
      text.replace(at, secret.size(), "****");
    }
  }
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Conn>> Conn::Connect(const std::string& uri) {
  // Defaults first: the URI's own settings override them (expand_dbname).
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "f2obo-server", uri.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) return absl::UnavailableError("PostgreSQL: out of memory connecting");
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why =
        Scrubbed(std::string(absl::StripTrailingAsciiWhitespace(PQerrorMessage(c))), uri);
    PQfinish(c);
    return absl::UnavailableError(absl::StrCat("cannot connect to PostgreSQL: ", why));
  }
  return std::unique_ptr<Conn>(new Conn(c));
}

Conn::~Conn() { PQfinish(c_); }

bool Conn::broken() const { return PQstatus(c_) != CONNECTION_OK; }

std::string Conn::server() const {
  if (c_ == nullptr) return "(closed)";
  return absl::StrCat(PQhost(c_), ":", PQport(c_));
}

absl::Status Conn::Check(absl::string_view what, PGresult* r) const {
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return absl::OkStatus();
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string msg(absl::StripTrailingAsciiWhitespace(
      r != nullptr && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(c_)));
  const absl::StatusCode code =
      broken() || state == nullptr ? absl::StatusCode::kUnavailable : CodeOfSqlState(state);
  return absl::Status(code, absl::StrCat("PostgreSQL store, ", what, ": ", msg,
                                         state != nullptr ? absl::StrCat(" (SQLSTATE ", state, ")")
                                                          : std::string()));
}

namespace {

// PQexecPrepared's parameter arrays over `params` (which they view).
struct Arrays {
  explicit Arrays(const std::vector<Param>& params) {
    terminated.reserve(params.size());
    for (const Param& p : params) {
      if (p.null) {
        values.push_back(nullptr);
        lengths.push_back(0);
        formats.push_back(0);
      } else if (p.binary) {
        values.push_back(p.bytes.data());
        lengths.push_back(static_cast<int>(p.bytes.size()));
        formats.push_back(1);
      } else {
        terminated.emplace_back(p.bytes);
        values.push_back(terminated.back().c_str());
        lengths.push_back(0);
        formats.push_back(0);
      }
    }
  }
  int size() const { return static_cast<int>(values.size()); }
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<std::string> terminated;  // text parameters need a NUL
};

std::vector<Param> ParamsOf(const Statement& statement) {
  std::vector<Param> params;
  params.reserve(statement.values.size());
  for (const Statement::Value& v : statement.values) {
    if (v.null) {
      params.push_back(Param::Null());
    } else {
      params.push_back(v.binary ? Param::Blob(v.bytes) : Param(v.bytes));
    }
  }
  return params;
}

}  // namespace

absl::StatusOr<const std::string*> Conn::Prepared(absl::string_view what, const char* sql) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = absl::StrCat("f2obo_", prepared_.size());
    PGresult* prep = PQprepare(c_, name.c_str(), sql, 0, nullptr);
    const absl::Status s = Check(absl::StrCat(what, " (prepare)"), prep);
    if (prep != nullptr) PQclear(prep);
    if (!s.ok()) return s;
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  return &it->second;
}

absl::StatusOr<Result> Conn::RunParams(absl::string_view what, const char* sql,
                                       const std::vector<Param>& params) {
  absl::StatusOr<const std::string*> name = Prepared(what, sql);
  if (!name.ok()) return name.status();
  const Arrays a(params);
  PGresult* r = PQexecPrepared(c_, (*name)->c_str(), a.size(), a.values.data(), a.lengths.data(),
                               a.formats.data(), /*binary=*/1);
  if (absl::Status s = Check(what, r); !s.ok()) {
    if (r != nullptr) PQclear(r);
    return s;
  }
  return Result(r);
}

absl::StatusOr<Result> Conn::Run(absl::string_view what, const char* sql,
                                 std::initializer_list<Param> params) {
  return RunParams(what, sql, std::vector<Param>(params));
}

absl::StatusOr<Result> Conn::Run(absl::string_view what, const Statement& statement) {
  return RunParams(what, statement.sql, ParamsOf(statement));
}

absl::StatusOr<std::vector<Result>> Conn::RunPipeline(absl::string_view what,
                                                      const std::vector<const Statement*>& batch) {
  std::vector<const std::string*> names;
  for (const Statement* st : batch) {  // prepared before the pipeline starts
    absl::StatusOr<const std::string*> name = Prepared(what, st->sql);
    if (!name.ok()) return name.status();
    names.push_back(*name);
  }
  const auto failed = [&](const char* doing) {
    return absl::UnavailableError(
        absl::StrCat("PostgreSQL store, ", what, ": ", doing, ": ",
                     absl::StripTrailingAsciiWhitespace(PQerrorMessage(c_))));
  };
  if (PQenterPipelineMode(c_) != 1) return failed("entering pipeline mode");
  absl::Status first_error;
  for (size_t i = 0; i < batch.size() && first_error.ok(); ++i) {
    const std::vector<Param> params = ParamsOf(*batch[i]);
    const Arrays a(params);
    if (PQsendQueryPrepared(c_, names[i]->c_str(), a.size(), a.values.data(), a.lengths.data(),
                            a.formats.data(), /*binary=*/1) != 1) {
      first_error = failed("sending a statement");
    }
  }
  // What was sent is one transaction up to this Sync, committed at it.
  if (first_error.ok() && PQpipelineSync(c_) != 1) first_error = failed("sending Sync");
  if (!first_error.ok()) {
    // Not all sent: the connection is in an unknown state (nothing of an
    // unsynced pipeline commits); not reused.
    PQfinish(c_);
    c_ = nullptr;
    return first_error;
  }
  std::vector<Result> results;
  results.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    PGresult* r = PQgetResult(c_);
    if (r == nullptr) {
      first_error = failed("reading a result");
      break;
    }
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_PIPELINE_ABORTED) {
      PQclear(r);
    } else if (absl::Status s = Check(what, r); !s.ok()) {
      PQclear(r);
      if (first_error.ok()) first_error = s;
    } else {
      results.emplace_back(r);
    }
    // Each statement's results end with a null one.
    while (PGresult* extra = PQgetResult(c_)) PQclear(extra);
    if (broken()) break;
  }
  if (!broken()) {
    PGresult* sync = PQgetResult(c_);
    const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    if (sync != nullptr) PQclear(sync);
    if (!synced && first_error.ok()) first_error = failed("reading the Sync");
  }
  if (!broken() && PQexitPipelineMode(c_) != 1) {
    // Results left unread: the connection's state is not known, so it is
    // not reused (broken() from now on; the Sync may have committed).
    if (first_error.ok()) first_error = failed("leaving pipeline mode");
    PQfinish(c_);
    c_ = nullptr;
  }
  if (broken()) return first_error.ok() ? failed("the connection broke") : first_error;
  if (!first_error.ok()) return first_error;
  return results;
}

absl::StatusOr<Result> Conn::Exec(absl::string_view what, const char* sql) {
  PGresult* r = PQexec(c_, sql);
  if (absl::Status s = Check(what, r); !s.ok()) {
    if (r != nullptr) PQclear(r);
    return s;
  }
  return Result(r);
}

}  // namespace f2obo::server::pg
