#include "server/request_bounds.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace f2obo::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Whether a message of type `d` can hold a string at any depth (decided
// once per type; `deciding` holds the verdicts so far).
bool MayHoldStrings(const Descriptor* d, std::unordered_map<const Descriptor*, bool>* deciding) {
  if (const auto it = deciding->find(d); it != deciding->end()) return it->second;
  (*deciding)[d] = true;  // a recursive type, while deciding: look further
  bool holds = false;
  for (int i = 0; i < d->field_count() && !holds; ++i) {
    const FieldDescriptor* f = d->field(i);
    holds = f->type() == FieldDescriptor::TYPE_STRING ||
            (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
             MayHoldStrings(f->message_type(), deciding));
  }
  (*deciding)[d] = holds;
  return holds;
}

// The fields of a message type `d` that can hold a string at any depth:
// its string fields and those of message types that can.  Most of a step's
// bytes are batches of numbers (Batch, DenseMatrix, CsrMatrix): walking
// them, or listing a request's set fields by reflection, on every step cost
// more than the rest of the check.  Memoized per thread (no lock on the
// request path).
const std::vector<const FieldDescriptor*>& StringFields(const Descriptor* d) {
  thread_local std::unordered_map<const Descriptor*, std::vector<const FieldDescriptor*>> known;
  thread_local std::unordered_map<const Descriptor*, bool> holds;
  if (const auto it = known.find(d); it != known.end()) return it->second;
  std::vector<const FieldDescriptor*> fields;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->type() == FieldDescriptor::TYPE_STRING ||
        (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
         MayHoldStrings(f->message_type(), &holds))) {
      fields.push_back(f);
    }
  }
  return known.emplace(d, std::move(fields)).first->second;
}

// The first over-long string of a message: its path (built only once one
// is found, from the innermost field out) and its length.
struct TooLong {
  std::string field;
  size_t bytes = 0;
};

bool Check(const Message& m, TooLong* found);

// Field `f` of `m` (element `i` of a repeated one): false with `found`
// filled (the path from this field on) at an over-long string.
bool CheckField(const Message& m, const FieldDescriptor* f, int i, TooLong* found) {
  const Reflection* r = m.GetReflection();
  const bool string = f->type() == FieldDescriptor::TYPE_STRING;
  bool ok = true;
  if (string) {
    std::string scratch;
    const std::string& v = f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch)
                                            : r->GetStringReference(m, f, &scratch);
    if (v.size() > kMaxStringBytes) {
      found->bytes = v.size();
      ok = false;
    }
  } else {
    ok = Check(f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), found);
    if (!ok) found->field = absl::StrCat(".", found->field);
  }
  if (ok) return true;
  found->field = f->is_repeated() ? absl::StrCat(f->name(), "[", i, "]", found->field)
                                  : absl::StrCat(f->name(), found->field);
  return false;
}

bool Check(const Message& m, TooLong* found) {
  const Reflection* r = m.GetReflection();
  for (const FieldDescriptor* f : StringFields(m.GetDescriptor())) {
    // An unset string reads as "" (within the bound); an unset message is
    // not walked (its default instance holds no strings).
    const bool unset_message = !f->is_repeated() &&
                               f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
                               !r->HasField(m, f);
    if (unset_message) continue;
    const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      if (!CheckField(m, f, i, found)) return false;
    }
  }
  return true;
}

}  // namespace

absl::Status CheckStringBounds(const Message& request) {
  TooLong found;
  if (Check(request, &found)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(found.field, ": ", found.bytes,
                                                 " bytes, beyond the bound of ", kMaxStringBytes,
                                                 " bytes for identifiers and names"));
}

}  // namespace f2obo::server
