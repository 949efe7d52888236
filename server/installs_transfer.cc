// Exports, and sessions larger than a message (proto/f2obo/v1/
// transfer.proto): Export answers one message; ExportChunks streams a session from an immutable
// snapshot of its state, part by part, in chunks of bounded size;
// ImportChunks assembles one from such a stream, part by part, with the
// unary import's checks, and installs it only once the whole stream has
// arrived and its checksum holds.
//
// Memory: the export holds the snapshot (its parts shared copy-on-write
// with the live session: nothing of the state is copied) and one chunk;
// the import holds the state being built (what the session will hold)
// and one chunk and one part.  Neither ever holds the whole encoding.
//
// All or nothing: nothing of an import is findable, stored or claimed
// before its end chunk is checked; a stream that breaks, is cancelled or
// refused part-way (or a server killed meanwhile) leaves no session and no
// store record.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/aux_part_bytes.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/transfer_sum.h"
#include "server/ids.h"
#include "server/install_checks.h"
#include "server/installs.h"
#include "server/request_bounds.h"

namespace f2obo::server {
namespace {

// Protobuf framing a slice adds to its data (tags, lengths, part number),
// counted against a chunk's bytes so that chunk_bytes bounds the message.
constexpr int64_t kSliceOverhead = 24;

// Cuts an export's content into chunks of at most `limit` bytes of data
// (slices' and replies', plus their framing) and keeps the checksum.
class ChunkWriter {
 public:
  ChunkWriter(int64_t limit, const Installs::ChunkSink& write) : limit_(limit), write_(write) {}

  void Begin(const std::string& id, const std::string& spec, int64_t parts) {
    v1::TransferBegin* b = chunk_.mutable_begin();
    b->set_session_id(id);
    b->set_spec(spec);
    b->set_parts(parts);
    sum_.AddSpec(spec);
    used_ = static_cast<int64_t>(spec.size()) + kSliceOverhead;
  }

  absl::Status Part(int64_t part, absl::string_view bytes) {
    sum_.BeginPart(part);
    while (!bytes.empty()) {
      const int64_t room = limit_ - used_ - kSliceOverhead;
      if (room <= 0) {
        if (absl::Status s = Flush(); !s.ok()) return s;
        continue;
      }
      const size_t n = std::min(bytes.size(), static_cast<size_t>(room));
      v1::StateSlice* s = chunk_.add_slices();
      s->set_part(part);
      s->set_data(bytes.data(), n);
      sum_.AddSlice(bytes.substr(0, n));
      used_ += static_cast<int64_t>(n) + kSliceOverhead;
      state_bytes_ += static_cast<int64_t>(n);
      bytes.remove_prefix(n);
    }
    return absl::OkStatus();
  }

  // A reply is not cut: one larger than the limit goes alone in a chunk.
  absl::Status Reply(const std::string& bytes) {
    const int64_t size = static_cast<int64_t>(bytes.size()) + kSliceOverhead;
    if (used_ > 0 && used_ + size > limit_) {
      if (absl::Status s = Flush(); !s.ok()) return s;
    }
    chunk_.add_replies(bytes);
    sum_.AddReply(bytes);
    used_ += size;
    ++replies_;
    return absl::OkStatus();
  }

  absl::Status Finish() {
    v1::TransferEnd* end = chunk_.mutable_end();
    end->set_crc32(sum_.value());
    end->set_state_bytes(state_bytes_);
    end->set_replies(replies_);
    return Flush();
  }

 private:
  absl::Status Flush() {
    absl::Status s = write_(chunk_);
    chunk_.Clear();
    used_ = 0;
    return s;
  }

  const int64_t limit_;
  const Installs::ChunkSink& write_;
  v1::SessionChunk chunk_;
  int64_t used_ = 0;
  int64_t state_bytes_ = 0;
  int64_t replies_ = 0;
  v1::TransferSum sum_;
};

}  // namespace

absl::StatusOr<v1::SessionExport> Installs::Export(const std::string& id, int64_t max_bytes) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = table_->FindFresh(id);
  if (!e.ok()) return e.status();
  absl::MutexLock lock(&(*e)->mu);
  if (absl::Status s = (*e)->CheckNotRemoved(); !s.ok()) return s;
  const auto too_large = [&](int64_t bytes, const char* how) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "session '", id, "': its export is ", how, bytes, " bytes, beyond this server's ",
        "--max_message_bytes = ", max_bytes,
        "; ExportSessionStream sends it in chunks (and ImportSessionStream takes them)"));
  };
  // The state's encoding is at least its numbers (8 bytes each, and a
  // length per vector): known without encoding it, which at 1,000,000
  // tasks would take ~0.5 GB only to be refused.
  const SessionState& state = (*e)->session->state();
  int64_t numbers = state.x.size() + static_cast<int64_t>(state.aux.size());
  for (const Vector& v : state.vectors) numbers += v.size();
  const int64_t least = 8 * numbers + static_cast<int64_t>(state.aux.payload_bytes());
  if (least > max_bytes) return too_large(least, "at least ");
  v1::SessionExport out;
  out.set_session_id(id);
  *out.mutable_spec() = ToSessionSpec((*e)->session->config(), (*e)->exact_every);
  out.set_state((*e)->Encode(state));
  for (const v1::StepReply& r : (*e)->replies) *out.add_replies() = r;
  const int64_t bytes = static_cast<int64_t>(out.ByteSizeLong());
  if (bytes > max_bytes) return too_large(bytes, "");
  return out;
}

absl::Status Installs::ExportChunks(const std::string& id, int64_t chunk_bytes,
                                    const ChunkSink& write) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = table_->FindFresh(id);
  if (!e.ok()) return e.status();
  std::string spec;
  std::shared_ptr<const SessionState> state;
  std::string head;
  std::vector<std::string> replies;
  {
    // The state as committed now (immutable: later steps replace it), its
    // head with the running sums of that moment, and the reply cache; the
    // parts are read after the lock is released.
    absl::MutexLock lock(&(*e)->mu);
    if (absl::Status s = (*e)->CheckNotRemoved(); !s.ok()) return s;
    const Session& session = *(*e)->session;
    spec = ToSessionSpec(session.config(), (*e)->exact_every).SerializeAsString();
    state = session.snapshot();
    {
      absl::MutexLock sums(&(*e)->sums_mu);
      head = session.EncodeHead(*state);
    }
    for (const v1::StepReply& r : (*e)->replies) replies.push_back(r.SerializeAsString());
  }
  ChunkWriter w(chunk_bytes, write);
  w.Begin(id, spec, static_cast<int64_t>(state->aux.size()));
  if (absl::Status s = w.Part(0, head); !s.ok()) return s;
  head = std::string();
  std::string scratch;
  for (size_t i = 0; i < state->aux.size(); ++i) {
    const Vector& v = state->aux[i];
    if (v.size() == 0) continue;
    if (absl::Status s = w.Part(static_cast<int64_t>(i) + 1, AuxPartBytes(v, &scratch)); !s.ok()) {
      return s;
    }
  }
  for (const std::string& r : replies) {
    if (absl::Status s = w.Reply(r); !s.ok()) return s;
  }
  return w.Finish();
}

absl::StatusOr<v1::SessionInfo> Installs::ImportChunks(const ChunkSource& read, Deadline deadline) {
  v1::ImportSessionStreamRequest msg;
  absl::StatusOr<bool> got = read(&msg);
  if (!got.ok()) return got.status();
  if (!*got || !msg.chunk().has_begin()) {
    return absl::InvalidArgumentError(
        "chunk.begin: the first message must begin the transfer (transfer.proto); nothing "
        "imported");
  }
  const v1::TransferBegin& begin = msg.chunk().begin();
  const std::string id = msg.session_id().empty() ? begin.session_id() : msg.session_id();
  if (!IsSessionId(id)) {
    return absl::InvalidArgumentError(absl::StrCat("session_id: must match ", kSessionIdPattern));
  }
  // The spec and the replies as the unary import has them, for its checks.
  v1::SessionExport ex;
  if (!ex.mutable_spec()->ParseFromString(begin.spec())) {
    return absl::InvalidArgumentError(
        "chunk.begin.spec: could not decode the f2obo.v1.SessionSpec message");
  }
  if (absl::Status s = CheckStringBounds(ex.spec()); !s.ok()) {
    return Named("chunk.begin.spec", s);
  }
  absl::StatusOr<SessionConfig> config = CheckedConfig(limits_, ex.spec(), UnreadOptions::kDrop);
  if (!config.ok()) return config.status();
  absl::StatusOr<int64_t> room = table_->Reserve(*config, ex.spec(), /*enforce_limits=*/true);
  if (!room.ok()) return room.status();
  Reservation reserved(table_, *room);

  // What the stream may bring: at most the memory the server gives all
  // sessions (the state is built in memory as it arrives; an empty part
  // still costs a table slot of 16 bytes).
  const int64_t budget = limits_.max_total_state_bytes > 0 ? limits_.max_total_state_bytes
                                                           : std::numeric_limits<int64_t>::max();
  const int64_t parts = begin.parts();
  if (parts < 0 || parts > budget / 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk.begin.parts = ", parts, ": must be in [0, ", budget / 16,
                     "] (the server's --max_total_state_bytes = ", budget, " at 16 bytes a part)"));
  }
  v1::TransferSum sum;
  sum.AddSpec(begin.spec());
  std::optional<Checkpoint> state;
  int64_t current = -1;  // the part being received (0: the head)
  std::string bytes;     // its bytes so far
  int64_t state_bytes = 0;
  bool replies_begun = false;
  const auto finish_part = [&]() -> absl::Status {
    if (current < 0) return absl::OkStatus();
    if (current == 0) {
      absl::StatusOr<Checkpoint> head =
          DeserializeCheckpointHead(bytes, static_cast<size_t>(parts));
      if (!head.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("session.state: ", head.status().message()));
      }
      state = *std::move(head);
    } else if (absl::Status s = SetAuxPart(static_cast<size_t>(current - 1), bytes, &*state);
               !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("session.state: ", s.message()));
    }
    bytes = std::string();
    return absl::OkStatus();
  };
  for (int64_t n = 0;; ++n) {
    const v1::SessionChunk& chunk = msg.chunk();
    const std::string where = absl::StrCat("chunk ", n, ": ");
    if (n > 0 && (chunk.has_begin() || !msg.session_id().empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "chunk.begin and session_id belong to the first message only"));
    }
    for (int j = 0; j < chunk.slices_size(); ++j) {
      const v1::StateSlice& slice = chunk.slices(j);
      const int64_t p = slice.part();
      if (replies_begun || p < current || p > parts || (current < 0 && p != 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "chunk.slices[", j, "].part = ", p,
            ": the head (part 0) comes first, then parts in increasing order up to begin.parts = ",
            parts, ", before any reply (the part before was ", current, ")"));
      }
      state_bytes += static_cast<int64_t>(slice.data().size());
      if (state_bytes > budget) {
        return absl::ResourceExhaustedError(
            absl::StrCat("session '", id, "': the state sent exceeds ", budget,
                         " bytes, the server's --max_total_state_bytes; nothing imported"));
      }
      if (p != current) {
        if (absl::Status s = finish_part(); !s.ok()) return s;
        current = p;
        sum.BeginPart(p);
      }
      bytes.append(slice.data());
      sum.AddSlice(slice.data());
    }
    for (int j = 0; j < chunk.replies_size(); ++j) {
      if (!replies_begun) {
        if (absl::Status s = finish_part(); !s.ok()) return s;
        replies_begun = true;
      }
      if (!ex.add_replies()->ParseFromString(chunk.replies(j))) {
        return absl::InvalidArgumentError(absl::StrCat(where, "chunk.replies[", j,
                                                       "]: could not decode the "
                                                       "f2obo.v1.StepReply message"));
      }
      sum.AddReply(chunk.replies(j));
    }
    if (chunk.has_end()) {
      if (!replies_begun) {
        if (absl::Status s = finish_part(); !s.ok()) return s;
      }
      const v1::TransferEnd& end = chunk.end();
      if (!state.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "chunk.end: the state's head (part 0) was never sent"));
      }
      if (end.state_bytes() != state_bytes || end.replies() != ex.replies_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "chunk.end: announces ", end.state_bytes(), " bytes of state and ",
                         end.replies(), " replies, the stream carried ", state_bytes, " and ",
                         ex.replies_size(), "; nothing imported"));
      }
      if (end.crc32() != sum.value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "chunk.end.crc32 = ", end.crc32(), ": the content received has crc32 ",
            sum.value(), " (damaged in transit); nothing imported"));
      }
      got = read(&msg);
      if (!got.ok()) return got.status();
      if (*got) {
        return absl::InvalidArgumentError(
            absl::StrCat("chunk ", n + 1, ": a message after the end chunk; nothing imported"));
      }
      break;
    }
    got = read(&msg);
    if (!got.ok()) return got.status();
    if (!*got) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk.end: the stream ended after ", n + 1, " chunks (", state_bytes,
                       " bytes of state) without its end chunk; nothing imported"));
    }
  }
  absl::StatusOr<std::shared_ptr<SessionEntry>> entry =
      BuildImported(id, ex, *config, *std::move(state), reserved.bytes());
  if (!entry.ok()) return entry.status();
  absl::StatusOr<v1::SessionInfo> info =
      Install(*std::move(entry), /*generate_id=*/false, /*persisted=*/false, deadline);
  if (info.ok()) reserved.Keep();
  return info;
}

}  // namespace f2obo::server
