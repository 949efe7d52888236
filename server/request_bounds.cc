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

// Whether a message of type `d` can hold a string at any depth.  Most of a
// step's bytes are batches of numbers (Batch, DenseMatrix, CsrMatrix):
// walking them field by field on every step cost more than the rest of the
// check, and their types never hold a string.  Memoized per thread (no lock
// on the request path); a type on a cycle counts as holding strings while
// it is being decided, which can only make the walk look further.
bool MayHoldStrings(const Descriptor* d) {
  thread_local std::unordered_map<const Descriptor*, bool> known;
  if (const auto it = known.find(d); it != known.end()) return it->second;
  known[d] = true;  // (a recursive type, while deciding)
  bool holds = false;
  for (int i = 0; i < d->field_count() && !holds; ++i) {
    const FieldDescriptor* f = d->field(i);
    holds =
        f->type() == FieldDescriptor::TYPE_STRING ||
        (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && MayHoldStrings(f->message_type()));
  }
  known[d] = holds;
  return holds;
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
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);  // set fields only: numbers and bytes are skipped cheaply
  for (const FieldDescriptor* f : fields) {
    const bool string = f->type() == FieldDescriptor::TYPE_STRING;
    const bool message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!string && !(message && MayHoldStrings(f->message_type()))) continue;
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
