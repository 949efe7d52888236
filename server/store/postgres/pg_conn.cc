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

std::string Conn::server() const { return absl::StrCat(PQhost(c_), ":", PQport(c_)); }

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

absl::StatusOr<Result> Conn::Run(absl::string_view what, const char* sql,
                                 std::initializer_list<Param> params) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = absl::StrCat("f2obo_", prepared_.size());
    PGresult* prep = PQprepare(c_, name.c_str(), sql, 0, nullptr);
    const absl::Status s = Check(absl::StrCat(what, " (prepare)"), prep);
    if (prep != nullptr) PQclear(prep);
    if (!s.ok()) return s;
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<std::string> terminated;  // text parameters need a NUL
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
  PGresult* r = PQexecPrepared(c_, it->second.c_str(), static_cast<int>(values.size()),
                               values.data(), lengths.data(), formats.data(), /*binary=*/1);
  if (absl::Status s = Check(what, r); !s.ok()) {
    if (r != nullptr) PQclear(r);
    return s;
  }
  return Result(r);
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
