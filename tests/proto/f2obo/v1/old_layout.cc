#include "tests/proto/f2obo/v1/old_layout.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace f2obo::test {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Copies field `f` of `from` into field `g` of `to` (same type, by name).
void CopyScalar(const Message& from, const FieldDescriptor* f, Message* to,
                const FieldDescriptor* g) {
  const Reflection* rf = from.GetReflection();
  const Reflection* rt = to->GetReflection();
  if (f->is_repeated()) {
    for (int i = 0; i < rf->FieldSize(from, f); ++i) {
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_DOUBLE:
          rt->AddDouble(to, g, rf->GetRepeatedDouble(from, f, i));
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          rt->AddInt64(to, g, rf->GetRepeatedInt64(from, f, i));
          break;
        case FieldDescriptor::CPPTYPE_INT32:
          rt->AddInt32(to, g, rf->GetRepeatedInt32(from, f, i));
          break;
        default:
          break;
      }
    }
    return;
  }
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      rt->SetDouble(to, g, rf->GetDouble(from, f));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      rt->SetInt64(to, g, rf->GetInt64(from, f));
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      rt->SetInt32(to, g, rf->GetInt32(from, f));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      rt->SetBool(to, g, rf->GetBool(from, f));
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      rt->SetString(to, g, rf->GetString(from, f));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      rt->SetEnumValue(to, g, rf->GetEnumValue(from, f));
      break;
    default:
      break;
  }
}

// Writes the set fields of `from` (a message of the new layout) into `to`
// (its old-layout counterpart) by name; a field `to` lacks goes to
// `parent` (the message the old layout kept it in).
void ToOld(const Message& from, Message* to, Message* parent, std::string* failures) {
  const Reflection* rf = from.GetReflection();
  std::vector<const FieldDescriptor*> set;
  rf->ListFields(from, &set);
  for (const FieldDescriptor* f : set) {
    const bool class_part =
        f->containing_oneof() != nullptr && f->containing_oneof()->name() == "problem_class";
    if (class_part && f->name() == "bilevel") {  // the old layout's top level
      ToOld(rf->GetMessage(from, f), to, nullptr, failures);
      continue;
    }
    Message* in = to;
    const FieldDescriptor* g = to->GetDescriptor()->FindFieldByName(f->name());
    if (g == nullptr && parent != nullptr) {
      in = parent;
      g = parent->GetDescriptor()->FindFieldByName(f->name());
    }
    if (g == nullptr && f->name() == "converged" && parent != nullptr &&
        f->containing_type()->name() == "MultitaskExactMetrics") {
      const bool converged = rf->GetBool(from, f);
      const Reflection* rp = parent->GetReflection();
      rp->SetBool(parent, parent->GetDescriptor()->FindFieldByName("inner_converged"), converged);
      rp->SetBool(parent, parent->GetDescriptor()->FindFieldByName("cg_converged"), converged);
      continue;
    }
    if (g == nullptr) {
      absl::StrAppend(failures, f->full_name(), " has no place in the old layout; ");
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Reflection* rt = in->GetReflection();
      if (f->is_repeated()) {
        for (int i = 0; i < rf->FieldSize(from, f); ++i) {
          ToOld(rf->GetRepeatedMessage(from, f, i), rt->AddMessage(in, g), in, failures);
        }
      } else {
        ToOld(rf->GetMessage(from, f), rt->MutableMessage(in, g), in, failures);
      }
      continue;
    }
    CopyScalar(from, f, in, g);
  }
}

}  // namespace

old_layout::StepReply ToOldLayout(const v1::StepReply& reply, std::string* failures) {
  old_layout::StepReply out;
  ToOld(reply, &out, nullptr, failures);
  return out;
}

v1::StepReply ReadOldLayout(const v1::StepReply& reply, std::string* failures) {
  v1::StepReply read;
  if (!read.ParseFromString(ToOldLayout(reply, failures).SerializeAsString())) {
    absl::StrAppend(failures, "the old layout's bytes do not parse as a v1.StepReply; ");
  }
  return read;
}

}  // namespace f2obo::test
